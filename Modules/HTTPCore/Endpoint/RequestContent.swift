public import Foundation
import HTTPTypes

/// What an endpoint sends: a body, and for parameter encodings possibly query items.
///
/// Content is applied to a ``RequestDraft`` when the client builds the request, with the
/// client's encoders at hand. The Encoding and Multipart modules add more factories.
///
/// ```swift
/// var body: RequestContent { .json(NewPost(title: "Hi")) }
/// var body: RequestContent { .data(png, contentType: "image/png") }
/// var body: RequestContent { try .file(URL(fileURLWithPath: "/tmp/big.bin")) }
/// ```
public struct RequestContent: Sendable {
    private let apply: @Sendable (inout RequestDraft, EncodingContext) throws -> Void

    /// Content that changes the draft with `apply`; the building block for encodings.
    public init(_ apply: @escaping @Sendable (inout RequestDraft, EncodingContext) throws -> Void) {
        self.apply = apply
    }

    /// Applies the content to `draft`, mapping any error other than ``NetworkError`` to
    /// ``NetworkError/encoding(_:)``.
    public func apply(to draft: inout RequestDraft, context: EncodingContext) throws(NetworkError) {
        do { try apply(&draft, context) } catch let error as NetworkError { throw error } catch {
            throw NetworkError.encoding(EncodingFailure(keyPath: [], message: "\(error)"))
        }
    }

    /// No body.
    public static let none = RequestContent { _, _ in }

    /// Raw bytes, with an optional `Content-Type`.
    public static func data(_ data: Data, contentType: String? = nil) -> RequestContent {
        RequestContent { draft, _ in
            draft.body = .data(data)
            if let contentType { draft.setContentType(contentType) }
        }
    }

    /// UTF-8 text, `text/plain` unless another content type is given.
    public static func text(_ text: String, contentType: String = "text/plain; charset=utf-8") -> RequestContent {
        .data(Data(text.utf8), contentType: contentType)
    }

    /// An `Encodable` value as JSON, with the client's encoder unless `encoder` is given.
    public static func json<Value: Encodable & Sendable>(_ value: Value, encoder: JSONEncoder? = nil) -> RequestContent {
        RequestContent { draft, context in
            let data: Data
            do { data = try (encoder ?? context.jsonEncoder).encode(value) } catch let error as EncodingError {
                throw NetworkError.encoding(EncodingFailure(error))
            }
            draft.body = .data(data)
            draft.setContentType("application/json")
        }
    }

    /// A file streamed from disk; the content type defaults to `application/octet-stream`.
    public static func file(_ url: URL, contentType: String = "application/octet-stream") throws(NetworkError) -> RequestContent {
        let body = try RequestBody.file(url)
        return RequestContent { draft, _ in
            draft.body = body
            draft.setContentType(contentType)
        }
    }

    /// A streamed body made anew for every attempt by `makeStream`.
    public static func stream(length: Int?, contentType: String = "application/octet-stream", _ makeStream: @escaping @Sendable () -> ByteStream) -> RequestContent {
        RequestContent { draft, _ in
            draft.body = .stream(length: length, makeStream)
            draft.setContentType(contentType)
        }
    }

    /// Content that fails with `error` when the request is built; lets a computed
    /// ``Endpoint/body`` report an encoding problem without throwing.
    public static func failure(_ error: NetworkError) -> RequestContent {
        RequestContent { _, _ in throw error }
    }

    /// Evaluates `make` now, turning a thrown error into ``failure(_:)``.
    ///
    /// Encodings of non-`Sendable` values (`[String: Any]`) use this to encode eagerly.
    public static func evaluating(_ make: () throws -> RequestContent) -> RequestContent {
        do { return try make() } catch let error as NetworkError { return .failure(error) } catch {
            return .failure(.encoding(EncodingFailure(keyPath: [], message: "\(error)")))
        }
    }

    /// Several contents applied in order, such as query parameters plus a JSON body.
    public static func combined(_ parts: [RequestContent]) -> RequestContent {
        RequestContent { draft, context in
            for part in parts { try part.apply(&draft, context) }
        }
    }
}

/// What content sees while it is applied: the client's encoders.
public struct EncodingContext: Sendable {
    /// The client's JSON encoder.
    public var jsonEncoder: JSONEncoder

    /// A context whose content encodes JSON with `jsonEncoder`.
    public init(jsonEncoder: JSONEncoder) {
        self.jsonEncoder = jsonEncoder
    }
}

extension EncodingFailure {
    /// The failure described by a Foundation `EncodingError`, with its coding path.
    public init(_ error: EncodingError) {
        switch error {
        case .invalidValue(let value, let context):
            self.init(
                keyPath: context.codingPath.map(\.stringValue),
                message: "invalid value \(value): \(context.debugDescription)"
            )
        @unknown default:
            self.init(keyPath: [], message: "\(error)")
        }
    }
}
