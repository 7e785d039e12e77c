public import Foundation
public import HTTPCore
public import HTTPTypes
public import OpenAPIRuntime

/// A `ClientTransport` of swift-openapi-runtime that sends through an `HTTPCore.APIClient`,
/// so a client made by swift-openapi-generator gets Courier's transports, plugins,
/// interceptors, retries, redirects, reachability checks and errors.
///
/// ```swift
/// let client = APIClient(baseURL: URL(string: "https://api.example.com")!, transport: AsyncHTTPClientTransport())
/// let notes = Client(                                   // the generated client
///     serverURL: try Servers.Server1.url(),
///     transport: APIClientTransport(client: client, scopes: ["notes-api"])
/// )
/// let note = try await notes.getNote(path: .init(noteId: 7)).ok.body.json
/// ```
///
/// How a call goes:
/// - The generated request head (method, path with query, header fields) is the head Courier
///   sends: both speak swift-http-types, so nothing is converted. The server URL the generated
///   client passes gives the scheme, the authority and a path prefix; the client's default
///   headers are added under names the operation does not set.
/// - The request body streams from the `HTTPBody` into the transport; the response body streams
///   back as an `HTTPBody` that the generated code reads (or you iterate, for binary bodies).
/// - The call is named by its OpenAPI operation id (`CallContext.endpointName`, so logs,
///   metrics and traces show `getNote`), and is in the plugin scopes ``scopes`` gives it.
/// - Every status comes back to the generated client by default (``validation`` is
///   `StatusValidation.any`), which turns documented ones into its output cases and others into
///   `.undocumented`. Failures below HTTP, a retry budget spent, a cancelled task or a
///   plugin's refusal throw `NetworkError`; the generated client wraps it in a `ClientError`
///   whose `OpenAPIRuntime.ClientError.networkError` gives it back.
///
/// Retries and 307/308 redirects send the body again. A body the generated code can iterate
/// several times (JSON, text, form bodies, and multipart bodies built from an array) is sent
/// again as it is; a body it can iterate only once (a multipart or binary body made from a
/// stream) fails such a second attempt with `NetworkError.invalidRequest(_:)`, which ends
/// the retries.
public struct APIClientTransport: ClientTransport {
    /// The client every call goes through.
    public let client: APIClient
    /// Which statuses the client accepts; the rest become `NetworkError` cases before the
    /// generated client sees them. `StatusValidation.any` (the default) hands every status to
    /// the generated client.
    public let validation: StatusValidation
    /// The plugin scopes of each operation, by operation id.
    public let scopes: @Sendable (_ operationID: String) -> Set<PluginScope>
    private let bases = BaseCache()

    /// A transport over `client` whose operations are all in `scopes`.
    public init(client: APIClient, scopes: Set<PluginScope> = [], validation: StatusValidation = .any) {
        self.init(client: client, validation: validation, scopes: { _ in scopes })
    }

    /// A transport over `client` whose operations get their plugin scopes from `scopes`, given
    /// the operation id.
    public init(client: APIClient, validation: StatusValidation = .any, scopes: @escaping @Sendable (_ operationID: String) -> Set<PluginScope>) {
        self.client = client
        self.validation = validation
        self.scopes = scopes
    }

    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        let prepared = try prepare(request, body: body, baseURL: baseURL)
        let response = try await client.stream(prepared, name: operationID, scopes: scopes(operationID), validation: validation)
        return Self.openAPIResponse(response, method: request.method)
    }

    /// The request as Courier sends it, before plugins run: the generated head on the server
    /// URL, with the client's default headers and timeout, and the body as a stream.
    ///
    /// - Throws: ``NetworkError/invalidRequest(_:)`` for a server URL that is not an absolute
    ///   `http` or `https` URL.
    package func prepare(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL) throws(NetworkError) -> PreparedRequest {
        let base = try bases.parts(of: baseURL)
        let path = request.path ?? "/"
        return PreparedRequest(
            method: request.method, scheme: base.scheme, authority: base.authority,
            path: base.path + (path.hasPrefix("/") ? path : "/" + path),
            headers: client.withDefaults(request.headerFields), body: body.map(Self.requestBody),
            timeout: client.configuration.timeout
        )
    }

    /// `body` as a Courier body: a stream of its chunks, made anew for each attempt, with its
    /// length when known. A body that can be iterated only once fails a second attempt (a
    /// retry, a 307/308) with ``NetworkError/invalidRequest(_:)``, which is not retried.
    package static func requestBody(_ body: HTTPBody) -> RequestBody {
        let length: Int? = switch body.length {
        case .known(let count): Int(exactly: count)
        case .unknown: nil
        }
        guard body.iterationBehavior == .single else {
            return .stream(length: length) { ByteStream(body.map { Data($0) }) }
        }
        let used = LockedBox(false)
        return .stream(length: length) {
            guard !used.withLock({ used in defer { used = true }; return used }) else {
                return ByteStream {
                    throw NetworkError.invalidRequest(.other(
                        "the request body can be sent only once (the generated code made it from a single-pass sequence), so the request cannot be sent again for a retry or a 307/308 redirect"
                    ))
                }
            }
            return ByteStream(body.map { Data($0) })
        }
    }

    /// A Courier response as the generated client reads it: the same head, and the body as a
    /// single-pass `HTTPBody` (none for `HEAD`, `CONNECT` and `TRACE`), with the length its
    /// `Content-Length` announces unless a `Content-Encoding` says the bytes were decoded.
    package static func openAPIResponse<Body: AsyncSequence & Sendable>(
        _ response: Response<Body>, method: HTTPRequest.Method
    ) -> (HTTPResponse, HTTPBody?) where Body.Element == Data {
        let head = HTTPResponse(status: response.status, headerFields: response.headers)
        switch method {
        case .head, .connect, .trace:
            return (head, nil)
        default:
            var length = HTTPBody.Length.unknown
            if response.headers[.contentEncoding] == nil, let text = response.headers[.contentLength], let count = Int64(text), count >= 0 {
                length = .known(count)
            }
            return (head, HTTPBody(response.body, length: length, iterationBehavior: .single))
        }
    }
}

/// A server URL's scheme, authority and path (without a trailing `/`), as a request head has
/// them; the last one parsed is kept, since a generated client passes the same URL each time.
private final class BaseCache: Sendable {
    struct Parts: Sendable {
        let url: URL
        let scheme: String
        let authority: String
        let path: String
    }

    private let last = LockedBox<Parts?>(nil)

    func parts(of url: URL) throws(NetworkError) -> Parts {
        if let known = last.current, known.url == url { return known }
        let head = HTTPRequest(method: .get, url: url)
        guard let scheme = head.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let authority = head.authority, !authority.isEmpty else {
            throw .invalidRequest(.malformedURL(url.absoluteString))
        }
        var path = url.query == nil ? head.path ?? "" : String((head.path ?? "").prefix { $0 != "?" })
        if path.hasSuffix("/") { path.removeLast() }
        let parts = Parts(url: url, scheme: scheme, authority: authority, path: path)
        last.withLock { $0 = parts }
        return parts
    }
}

extension ClientError {
    /// The Courier error under this one, when the transport threw one: a failure below HTTP, a
    /// status the transport's ``APIClientTransport/validation`` refused, a cancelled call, an
    /// offline check, or a plugin's error.
    public var networkError: NetworkError? { underlyingError as? NetworkError }
}
