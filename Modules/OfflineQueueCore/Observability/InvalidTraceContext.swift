

/// A `traceparent` or `tracestate` value not of the W3C Trace Context format.
public struct InvalidTraceContext: Error, Sendable, Hashable, CustomStringConvertible {
    /// `traceparent` or `tracestate`.
    public let field: String
    /// The value as given.
    public let value: String
    /// What is wrong with it, in words.
    public let reason: String

    public var description: String { "\(field) \(value.prefix(80).debugDescription) \(reason)" }
}
