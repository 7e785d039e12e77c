/// The name of a key in a keyring: eight lowercase hexadecimal digits, random when the key is
/// made, and never reused for other key bytes. Entries store it in clear to say which key
/// sealed them.
public struct KeyID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The eight digits, such as `3fa9c01e`.
    public let rawValue: String

    /// The id `string` names, or `nil` unless it is exactly eight lowercase hexadecimal digits.
    public init?(_ string: String) {
        guard string.utf8.count == 8, string.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return nil
        }
        rawValue = string
    }

    /// A fresh random id.
    static func random() -> KeyID {
        var generator = SystemRandomNumberGenerator()
        let digits = String(generator.next() as UInt32, radix: 16)
        return KeyID(String(repeating: "0", count: 8 - digits.count) + digits)!
    }

    public var description: String { rawValue }

    public static func < (lhs: KeyID, rhs: KeyID) -> Bool { lhs.rawValue < rhs.rawValue }
}
