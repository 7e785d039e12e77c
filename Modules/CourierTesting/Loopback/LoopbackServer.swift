public import Foundation
public import HTTPCore

/// An HTTP/1.1 server on a loopback port, in process, for tests that want real HTTP on the
/// wire: it answers every request through a `Transport`, usually a ``StubTransport`` whose
/// routes script the answers and which records what arrived.
///
/// Use it where a ``StubTransport`` alone is not enough: to test code over a real transport
/// (`AsyncHTTPClientTransport`, `URLSessionTransport`), an offline queue draining to a
/// server, or a program that takes a URL. Nothing leaves the machine.
///
/// ```swift
/// import CourierTesting
///
/// let stub = StubTransport()
/// stub.on(.get, "/users/42", respond: .json(#"{"id":42,"name":"Ada"}"#))
/// stub.on(.post, "/events", respond: .status(201))
/// let server = try await LoopbackServer.start(answering: stub)
/// let transport = AsyncHTTPClientTransport()
/// let client = APIClient(baseURL: server.baseURL, transport: transport)
/// let user: User = try await client.model(Request<User>.get("/users/42"))
/// #expect(stub.recordedRequests.first?.head.path == "/users/42")
/// try await transport.shutdown()
/// await server.shutdown()
/// ```
///
/// How a `Transport` answer goes on the wire:
/// - The responder gets the request as it arrived: method, `http` scheme, the `Host` header as
///   authority, the request target as path, the other header fields, and the body (collected
///   in memory; `nil` when the request had neither `Content-Length` nor `Transfer-Encoding`).
/// - The response keeps its status and header fields; a body without `Content-Length` is sent
///   chunked. `HEAD`, 1xx, 204 and 304 answers carry no body.
/// - A responder that throws (a stub's ``StubTransport/Stub/failure(_:)``, say) makes the server
///   close the connection without an answer: the client sees the connection lost.
/// - Connections are kept alive unless the client asks otherwise. ``shutdown()`` closes the
///   listener and every connection, cancelling answers under way, and waits for them.
public final class LoopbackServer: Sendable {
    /// The address the server listens on.
    public var host: String { listener.host }
    /// The port the server listens on (chosen by the kernel).
    public var port: Int { listener.port }
    private let listener: LoopbackListener

    private init(listener: LoopbackListener) {
        self.listener = listener
    }

    /// Starts a server on `host` (a loopback address such as `127.0.0.1` or `::1`) at a free
    /// port, answering through `responder`.
    public static func start(host: String = "127.0.0.1", answering responder: any Transport) async throws -> LoopbackServer {
        let listener = try await LoopbackListener.bind(host: host)
        listener.serve { connection, _ in await Self.serve(connection, responder: responder) }
        return LoopbackServer(listener: listener)
    }

    /// `http://host:port`.
    public var baseURL: URL { url("") }

    /// The URL of `pathAndQuery` (empty, or starting with `/`) on this server.
    public func url(_ pathAndQuery: String) -> URL {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return URL(string: "http://\(authority)\(pathAndQuery)")!
    }

    /// Closes the listener and every connection, and waits until they are closed.
    public func shutdown() async {
        await listener.shutdown()
    }
}
