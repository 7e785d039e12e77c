public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What an entry stores in clear so that it can be opened: the format version, the id of the
/// key that sealed it, and its random salt. None of it is secret.
public struct EntrySeal: Sendable, Hashable, CustomStringConvertible {
    /// The format version: ``SealFormat/version``, or ``SealFormat/joinedVersion`` for an
    /// entry whose request and row-kept body are sealed as one value.
    public let version: Int
    /// The keyring key the entry's field keys derive from.
    public let keyID: KeyID
    /// ``SealFormat/saltSize`` random bytes, drawn when the entry was sealed.
    public let salt: Data

    /// The seal as read back from a store's columns. Nothing is checked here: opening checks
    /// the version and the salt's length.
    public init(version: Int, keyID: KeyID, salt: Data) {
        self.version = version
        self.keyID = keyID
        self.salt = salt
    }

    /// A fresh seal under `keyID`: the format `version` and a new random salt.
    static func fresh(keyID: KeyID, version: Int = SealFormat.version) -> EntrySeal {
        EntrySeal(version: version, keyID: keyID, salt: randomSalt())
    }

    /// ``SealFormat/saltSize`` bytes from the system's generator in one call: `arc4random_buf`
    /// (one `getrandom` on Linux's glibc; a draw per byte made sixteen system calls per sealed
    /// entry, two 64-bit draws two).
    private static func randomSalt() -> Data {
        var salt = Data(count: SealFormat.saltSize)
        salt.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        return salt
    }

    public var description: String { "EntrySeal(v\(version), key \(keyID), salt \(salt.hexDigits))" }
}
