public import Foundation
public import HTTPCore
public import HTTPTypes

/// A transport that answers from canned responses, for users' own tests (Moya's sample data).
///
/// Register a response per endpoint, or per method and path; every request is recorded.
/// Unmatched requests get a 404 unless a fallback is set. The same stub can also answer real
/// HTTP on a loopback port: see ``LoopbackServer``.
///
/// ```swift
/// import CourierTesting
///
/// let stub = StubTransport()
/// stub.on(UserAPI.user(id: 42), respond: try .json(User(id: 42, name: "Ada")))
/// stub.on(.delete, "/posts/7", respond: .status(204))
/// let client = APIClient(baseURL: URL(string: "https://api.test")!, transport: stub)
/// let user: User = try await client.model(UserAPI.user(id: 42))
/// #expect(stub.recordedRequests.count == 1)
/// ```
public final class StubTransport: Transport {
    /// A canned answer.
    public struct Stub: Sendable {
        /// The response status; 200 unless given.
        public var status: HTTPResponse.Status
        /// The response's header fields; `Content-Length` is added when they have none.
        public var headers: HTTPFields
        /// The response body; empty unless given.
        public var body: Data
        /// How long to wait before answering; cancellation during the wait is honoured.
        public var delay: Duration
        /// An error to throw instead of answering.
        public var error: NetworkError?

        /// An answer with `status`, `headers` and `body`, given after `delay`; when `error` is set,
        /// it is thrown instead of answering.
        public init(status: HTTPResponse.Status = .ok, headers: HTTPFields = [:], body: Data = Data(), delay: Duration = .zero, error: NetworkError? = nil) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
            self.error = error
        }

        /// An empty response with `code`.
        public static func status(_ code: Int, headers: HTTPFields = [:]) -> Stub {
            Stub(status: HTTPResponse.Status(code: code), headers: headers)
        }

        /// `value` encoded as JSON, with `Content-Type: application/json`.
        public static func json<Value: Encodable>(_ value: Value, status: Int = 200, encoder: JSONEncoder = JSONEncoder()) throws -> Stub {
            Stub(status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"], body: try encoder.encode(value))
        }

        /// A JSON document given as text.
        public static func json(_ text: String, status: Int = 200) -> Stub {
            Stub(status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"], body: Data(text.utf8))
        }

        /// A failure below HTTP.
        public static func failure(_ error: NetworkError) -> Stub {
            Stub(error: error)
        }
    }

    /// A request as the stub received it.
    public struct RecordedRequest: Sendable {
        /// The request head: method, scheme, authority, path with query, and header fields.
        public var head: HTTPRequest
        /// The body, read whole into memory; `nil` when the request had none.
        public var body: Data?
    }

    private struct Route: Sendable {
        var method: HTTPRequest.Method
        var path: String
        var stubs: [Stub]
        var responder: (@Sendable (RecordedRequest) -> Stub)?
    }

    private let state = LockedBox<(routes: [Route], recorded: [RecordedRequest], fallback: Stub)>(
        ([], [], .status(404))
    )

    /// A stub with no routes yet, which answers unmatched requests with `fallback` (a 404 unless
    /// given).
    public init(fallback: Stub = .status(404)) {
        state.withLock { $0.fallback = fallback }
    }

    /// Answers requests with `method` whose path (without the query) is `path` or ends with
    /// it. Several stubs for one route answer in turn; the last one repeats.
    public func on(_ method: HTTPRequest.Method, _ path: String, respond stubs: Stub...) {
        let route = Route(method: method, path: Self.pathWithoutQuery(path), stubs: stubs)
        state.withLock { $0.routes.append(route) }
    }

    /// Answers requests with `method` and `path` with what `responder` makes of each one,
    /// for answers that depend on the request (its headers, say).
    public func on(_ method: HTTPRequest.Method, _ path: String, responder: @escaping @Sendable (RecordedRequest) -> Stub) {
        let route = Route(method: method, path: Self.pathWithoutQuery(path), stubs: [], responder: responder)
        state.withLock { $0.routes.append(route) }
    }

    /// Answers the request `endpoint` describes.
    public func on(_ endpoint: some Endpoint, respond stubs: Stub...) {
        let route = Route(method: endpoint.method, path: Self.pathWithoutQuery(endpoint.path), stubs: stubs)
        state.withLock { $0.routes.append(route) }
    }

    /// Every request received so far, in order.
    public var recordedRequests: [RecordedRequest] { state.current.recorded }

    public func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        let bodyData = try await body?.collect(upTo: .max)
        let path = Self.pathWithoutQuery(request.path ?? "/")
        let recorded = RecordedRequest(head: request, body: bodyData)
        let answer = state.withLock { state -> Answer in
            state.recorded.append(recorded)
            guard let index = state.routes.lastIndex(where: { $0.method == request.method && (path == $0.path || path.hasSuffix($0.path)) }) else {
                return .stub(state.fallback)
            }
            if let responder = state.routes[index].responder { return .responder(responder) }
            let stubs = state.routes[index].stubs
            guard let first = stubs.first else { return .stub(state.fallback) }
            if stubs.count > 1 { state.routes[index].stubs.removeFirst() }
            return .stub(first)
        }
        let stub = switch answer {
        case .stub(let stub): stub
        case .responder(let responder): responder(recorded)
        }
        if stub.delay > .zero {
            do { try await Task.sleep(for: stub.delay) } catch { throw NetworkError.cancelled }
        }
        if let error = stub.error { throw error }
        var headers = stub.headers
        if headers[.contentLength] == nil { headers[.contentLength] = String(stub.body.count) }
        return TransportResponse(head: HTTPResponse(status: stub.status, headerFields: headers), body: ByteStream(data: stub.body))
    }

    private enum Answer {
        case stub(Stub)
        case responder(@Sendable (RecordedRequest) -> Stub)
    }

    private static func pathWithoutQuery(_ path: String) -> String {
        path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
    }
}
