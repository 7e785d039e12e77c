import CourierTesting
public import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// An HTTP/1.1 server on a loopback port, in process, for tests and examples: built-in routes
/// for every scenario a transport must handle (see ``Routes``), scripted responses, and a log
/// of what it received.
///
/// ```swift
/// let server = try await TestHTTPServer.start()
/// defer { Task { await server.shutdown() } }   // or: await server.shutdown() at the end
/// let url = server.url("/echo?a=1")
/// // ... send requests ...
/// #expect(server.requests.last?.method == "GET")
/// await server.shutdown()
/// ```
///
/// The server writes responses as raw bytes (see ``ResponseWriter``), so routes can also break
/// HTTP on purpose. ``shutdown()`` closes the listener and every connection and waits for them.
public final class TestHTTPServer: Sendable {
    /// The port the server listens on (chosen by the kernel).
    public var port: Int { listener.port }
    /// The address it listens on.
    public var host: String { listener.host }
    private let state = NIOLockedValueBox(State())
    private let listener: LoopbackListener

    struct State {
        var requests: [ServerRequest] = []
        var closedConnections: Set<Int> = []
        var customRoutes: [String: Routes.Handler] = [:]
        /// Paths whose request bodies are kept whole (``keepBodies(of:)``), and those bodies.
        var keptBodies: [String: [Data]] = [:]
    }

    private init(listener: LoopbackListener) {
        self.listener = listener
    }

    /// Starts a server on `host` (a loopback address) at `port`, a free one unless given (a
    /// port a server just left, for a server that comes back).
    public static func start(host: String = "127.0.0.1", port: Int = 0) async throws -> TestHTTPServer {
        let server = TestHTTPServer(listener: try await LoopbackListener.bind(host: host, port: port))
        server.listener.serve { connection, id in
            connection.channel.closeFuture.whenComplete { _ in
                server.state.withLockedValue { _ = $0.closedConnections.insert(id) }
            }
            await server.serve(connection, id: id)
        }
        return server
    }

    /// `http://host:port`.
    public var baseURL: URL { URL(string: "http://\(host):\(port)")! }

    /// The URL of `pathAndQuery` (which starts with `/`) on this server, through `host`
    /// (`localhost` reaches the same server under another host name).
    public func url(_ pathAndQuery: String, host: String? = nil) -> URL {
        URL(string: "http://\(host ?? self.host):\(port)\(pathAndQuery)")!
    }

    /// Every request received so far, in order of arrival (logged once its body was read).
    public var requests: [ServerRequest] { state.withLockedValue { $0.requests } }

    /// Whether connection `id` is closed.
    public func isConnectionClosed(_ id: Int) -> Bool {
        state.withLockedValue { $0.closedConnections.contains(id) }
    }

    /// Waits until connection `id` is closed, polling every 10 ms for at most `limit`;
    /// returns whether it closed.
    public func waitUntilConnectionClosed(_ id: Int, limit: Duration = .hangGuard) async -> Bool {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            if isConnectionClosed(id) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return isConnectionClosed(id)
    }

    /// Waits until a request whose path is `path` has arrived (polling every 10 ms, at most
    /// `limit`) and returns it.
    public func waitForRequest(path: String, limit: Duration = .hangGuard) async -> ServerRequest? {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            if let request = requests.last(where: { $0.path == path }) { return request }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return requests.last { $0.path == path }
    }

    /// Answers requests for exactly `path` (any method) with `handler`, before the built-in routes.
    public func route(_ path: String, _ handler: @escaping Routes.Handler) {
        state.withLockedValue { $0.customRoutes[path] = handler }
    }

    /// Answers requests for exactly `path` with a fixed response.
    public func script(_ path: String, status: Int = 200, headers: [HeaderField] = [], body: Data = Data()) {
        route(path) { _, writer in try await writer.respond(status: status, headers: headers, body: body) }
    }

    /// Keeps the bodies of requests for exactly `path` from now on, in order of arrival, for
    /// ``bodies(of:)``: for a receiver whose payload the test reads (an OTLP collector's, say).
    /// Other requests' bodies are only counted and checksummed.
    public func keepBodies(of path: String) {
        state.withLockedValue { $0.keptBodies[path] = $0.keptBodies[path] ?? [] }
    }

    /// The bodies kept for `path` (``keepBodies(of:)``), each whole.
    public func bodies(of path: String) -> [Data] {
        state.withLockedValue { $0.keptBodies[path] ?? [] }
    }

    /// Closes the listener and every connection, and waits until they are closed.
    public func shutdown() async {
        await listener.shutdown()
    }

    func record(_ request: ServerRequest, body: Data?) {
        state.withLockedValue { state in
            state.requests.append(request)
            if let body { state.keptBodies[request.path, default: []].append(body) }
        }
    }

    /// Whether the bodies of requests for `path` are kept.
    func keepsBodies(of path: String) -> Bool {
        state.withLockedValue { $0.keptBodies[path] != nil }
    }

    func customRoute(for path: String) -> Routes.Handler? {
        state.withLockedValue { $0.customRoutes[path] }
    }
}

/// A test server that could not do what was asked.
public struct TestServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
