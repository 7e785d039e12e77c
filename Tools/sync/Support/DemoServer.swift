import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle

/// `sync demo`'s server: a Hummingbird application on a loopback port the system chooses, which
/// answers `POST /events` with 200 and keeps each request's header fields, and 404 to anything
/// else. It is the console's own HTTP stack, so `sync` links no test library for its demo.
final class DemoServer: Sendable {
    /// The requests the server has answered, in order of arrival.
    private final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var fields: [HTTPFields] = []
        func append(_ headers: HTTPFields) { lock.withLock { fields.append(headers) } }
        var all: [HTTPFields] { lock.withLock { fields } }
    }

    /// `http://127.0.0.1:PORT`.
    let baseURL: URL
    private let received: Received
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    private init(baseURL: URL, received: Received, group: ServiceGroup, running: Task<Void, any Error>) {
        self.baseURL = baseURL
        self.received = received
        self.group = group
        self.running = running
    }

    /// Starts listening, and returns once the port is bound.
    static func start() async throws -> DemoServer {
        let received = Received()
        let router = Router()
        router.post("/events") { request, _ -> HTTPResponse.Status in
            received.append(request.headers)
            return .ok
        }
        var logger = Logger(label: "courier.demo.server")
        logger.logLevel = .warning
        let (ports, bound) = AsyncStream.makeStream(of: Int?.self)
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                bound.yield(channel.localAddress?.port)
                bound.finish()
            },
            logger: logger
        )
        let group = ServiceGroup(services: [application], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let running = Task {
            // A failure to bind ends the run before `onServerRunning`: the wait below ends too.
            defer { bound.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() ?? nil, let url = URL(string: "http://127.0.0.1:\(port)") else {
            await group.triggerGracefulShutdown()
            switch await running.result {
            case .failure(let error): complain("cannot start the demo's server on 127.0.0.1: \(error)")
            case .success: complain("the demo's server stopped before it listened")
            }
            throw SysExit.osError
        }
        return DemoServer(baseURL: url, received: received, group: group, running: running)
    }

    /// The header fields of every request answered so far.
    var requests: [HTTPFields] { received.all }

    /// Stops listening and waits for the server to close.
    func shutdown() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
