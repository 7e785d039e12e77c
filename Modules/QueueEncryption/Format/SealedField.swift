import Foundation

/// Which part of a queued request a sealed value holds. Its name is bound into the value's key
/// and associated data, so a value sealed as one field never opens as another.
public struct SealedField: Sendable, Hashable, CustomStringConvertible {
    /// The name bound into the format, such as `body`: ASCII, fixed for the format's life.
    public let name: String
    /// The name's bytes and HKDF's block counter 0x01: what ends the input of the HMAC that
    /// expands the field's key in versions 2 and 3.
    let expandSuffix: Data
    /// The name's part of the associated data (``AssociatedData``): its byte count, 32 bits
    /// big-endian, then the name.
    let associatedPart: Data

    private init(_ name: String) {
        self.name = name
        expandSuffix = Data(name.utf8) + [1]
        var part = Data()
        part.appendLengthPrefixedUTF8(name)
        associatedPart = part
    }

    /// The URL's path and query, then the headers (version 2): one value, so one key and one
    /// AES-GCM operation where version 1 spent two.
    public static let request = SealedField("request")
    /// The URL's path and query (the origin stays clear), in version 1.
    public static let target = SealedField("target")
    /// The request's headers, in the store's encoding, in version 1.
    public static let headers = SealedField("headers")
    /// The request's body.
    public static let body = SealedField("body")
    /// The request (as in ``request``) followed by its body, as one value (version 3): for an
    /// entry whose body is kept in its row and fits one chunk with the request.
    public static let entry = SealedField("entry")
    /// The response an entry kept at its delivery (status, kept header fields, body), sealed
    /// with a salt of its own under the entry's idempotency key.
    public static let response = SealedField("response")

    public var description: String { name }
}
