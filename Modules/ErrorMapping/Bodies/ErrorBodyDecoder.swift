public import Foundation
public import HTTPCore
import HTTPTypes

/// Decodes the body of an error response into a `Body`: RFC 9457 problem details, or an API's
/// own error type.
///
/// Only status errors are looked at (`unauthorized`, `forbidden`, `notFound`, `client`,
/// `server`, `unacceptableStatus`), with the body excerpt the client kept
/// (`ClientConfiguration.maxErrorBodySize`). A body that is absent, of another content type
/// or that does not decode gives `nil`, never an error: the status error stays the fact.
///
/// ```swift
/// struct APIErrorBody: Decodable, Sendable { var code: String; var message: String }
///
/// struct BillingErrors: DomainErrorFactory {
///     var errorBody: ErrorBodyDecoder<APIErrorBody> { .json() }
///     func make(from error: NetworkError, body: APIErrorBody?) -> BillingError {
///         body.map { .rejected(code: $0.code) } ?? .unexpected("\(error)")
///     }
/// }
/// ```
public struct ErrorBodyDecoder<Body: Sendable>: Sendable {
    private let decodeResponse: @Sendable (Response<Data>) -> Body?

    /// A decoder that reads a response with `decode`.
    public init(_ decode: @escaping @Sendable (Response<Data>) -> Body?) {
        self.decodeResponse = decode
    }

    /// The body of `response`, or `nil`.
    public func decode(_ response: Response<Data>) -> Body? {
        decodeResponse(response)
    }

    /// The body of the response a status error carries, or `nil` for any other error.
    public func decode(from error: NetworkError) -> Body? {
        switch error {
        case .unauthorized(let response), .forbidden(let response), .notFound(let response),
             .client(let response), .server(let response), .unacceptableStatus(let response):
            decode(response)
        default:
            nil
        }
    }

    /// Never decodes anything.
    public static var none: ErrorBodyDecoder<Body> { ErrorBodyDecoder { _ in nil } }

    /// Whether `response` says its body is JSON: `application/json`, any `+json` type
    /// (`application/problem+json`), or no `Content-Type` at all.
    public static func isJSON(_ response: Response<Data>) -> Bool {
        guard let value = response.headers[.contentType] else { return true }
        let mediaType = value.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
        return mediaType == "application/json" || mediaType.hasSuffix("+json")
    }
}

extension ErrorBodyDecoder where Body: Decodable {
    /// Decodes JSON error bodies (see ``isJSON(_:)``) as `Body` with `decoder`.
    public static func json(_ type: Body.Type = Body.self, decoder: JSONDecoder = JSONDecoder()) -> ErrorBodyDecoder<Body> {
        ErrorBodyDecoder { response in
            guard !response.body.isEmpty, isJSON(response) else { return nil }
            return try? decoder.decode(Body.self, from: response.body)
        }
    }
}

extension ErrorBodyDecoder where Body == ProblemDetails {
    /// RFC 9457 problem details from `application/problem+json` or `application/json` bodies.
    public static var problemDetails: ErrorBodyDecoder<ProblemDetails> { .json(ProblemDetails.self) }
}
