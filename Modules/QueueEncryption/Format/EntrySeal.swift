public import Foundation

/// What an entry stores in clear so that it can be opened: the format version, the id of the
/// key that sealed it, and its random salt. None of it is secret.
public struct EntrySeal: Sendable, Hashable, CustomStringConvertible {
    /// The format version, ``SealFormat/version`` for entries sealed by this module.
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

    /// A fresh seal under `keyID`: the current version and a new random salt.
    static func fresh(keyID: KeyID) -> EntrySeal {
        // Two 64-bit draws (one `getrandom` each on Linux), not a draw per byte: sixteen
        // system calls per sealed entry were most of what sealing added to an enqueue's.
        var generator = SystemRandomNumberGenerator()
        var words: (UInt64, UInt64) = (generator.next(), generator.next())
        let salt = withUnsafeBytes(of: &words) { Data($0) }
        assert(salt.count == SealFormat.saltSize)
        return EntrySeal(version: SealFormat.version, keyID: keyID, salt: salt)
    }

    public var description: String { "EntrySeal(v\(version), key \(keyID), salt \(salt.hexDigits))" }
}
