public import Foundation
import Crypto

/// One 256-bit key of a ``Keyring`` with its id.
///
/// Its bytes never leave the module except into a keyring file: `description` and
/// `debugDescription` show the id and the key-check value only.
public struct QueueKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The key's name, stored in clear beside every entry it seals.
    public let id: KeyID
    let key: SymmetricKey
    /// Version 2's HKDF extract of the key (salt ``SealFormat/keyLabel``), as the HMAC that
    /// expands every field key from it: keyed once per key, not once per entry.
    let expander: KeyedHMAC

    /// The size of a key in bytes.
    public static let byteCount = 32

    /// A key with the given id and bytes; throws `invalidSeal` unless there are 32 bytes.
    public init(id: KeyID, bytes: some ContiguousBytes) throws(SealError) {
        let key = SymmetricKey(data: bytes)
        guard key.bitCount == 256 else { throw .invalidSeal("a key has \(key.bitCount / 8) bytes, not \(Self.byteCount)") }
        self.init(id: id, key: key)
    }

    init(id: KeyID, key: SymmetricKey) {
        self.id = id
        self.key = key
        let extracted = HKDF<SHA256>.extract(inputKeyMaterial: key, salt: Data(SealFormat.keyLabel.utf8))
        expander = KeyedHMAC(key: SymmetricKey(data: extracted))
    }

    /// A new random key (`SymmetricKey(size: .bits256)`) under a new random id.
    public static func generate() -> QueueKey {
        QueueKey(id: .random(), key: SymmetricKey(size: .bits256))
    }

    /// The key-check value: the first 16 bytes of HMAC-SHA256 over `courier key check v1`
    /// keyed with the key, as 32 lowercase hexadecimal digits.
    ///
    /// It identifies the key's bytes without revealing them. A queue records it for each key
    /// id it uses, so that a keyring holding other bytes under a known id is refused before any
    /// entry is opened (``Keyring/check(_:keyCheckValue:)``).
    public var keyCheckValue: String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(SealFormat.keyCheckLabel.utf8), using: key)
        return Data(code).prefix(16).hexDigits
    }

    /// The key's base64 text, as a keyring file holds it.
    var base64: String {
        key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    public var description: String { "QueueKey(\(id), check \(keyCheckValue))" }
    public var debugDescription: String { description }
}
