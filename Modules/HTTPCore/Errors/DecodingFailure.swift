public import Foundation

/// A body that did not decode, with the response it came in.
public struct DecodingFailure: Sendable, CustomStringConvertible {
    /// The type the body was to become.
    public var type: String
    /// The coding path where decoding stopped.
    public var codingPath: [String]
    /// The decoder's explanation.
    public var message: String
    /// The response whose body failed to decode.
    public var response: Response<Data>?

    /// A failure to decode `type` (the type's name) at `codingPath`, with the decoder's
    /// `message`; `response` is `nil` when no response is at hand, as when mapping a decoded value
    /// fails.
    public init(type: String, codingPath: [String], message: String, response: Response<Data>?) {
        self.type = type
        self.codingPath = codingPath
        self.message = message
        self.response = response
    }

    /// The failure a Foundation `DecodingError` describes.
    public init(_ error: DecodingError, type: Any.Type, response: Response<Data>?) {
        let context: DecodingError.Context? = switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c): c
        @unknown default: nil
        }
        var message = context?.debugDescription ?? "\(error)"
        if case .keyNotFound(let key, _) = error { message = "no value for key '\(key.stringValue)'" }
        self.init(
            type: String(describing: type),
            codingPath: context?.codingPath.map(\.stringValue) ?? [],
            message: message,
            response: response
        )
    }

    public var description: String {
        let path = codingPath.isEmpty ? "" : " at \(codingPath.joined(separator: "."))"
        return "cannot decode \(type)\(path): \(message)"
    }
}
