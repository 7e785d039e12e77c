/// Which part of a queued request a sealed value holds. Its name is bound into the value's key
/// and associated data, so a value sealed as one field never opens as another.
public struct SealedField: Sendable, Hashable, CustomStringConvertible {
    /// The name bound into the format, such as `body`: ASCII, fixed for the format's life.
    public let name: String

    private init(_ name: String) { self.name = name }

    /// The URL's path and query (the origin stays clear).
    public static let target = SealedField("target")
    /// The request's headers, in the store's encoding.
    public static let headers = SealedField("headers")
    /// The request's body.
    public static let body = SealedField("body")

    public var description: String { name }
}
