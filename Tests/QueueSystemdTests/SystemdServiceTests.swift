import Foundation
import HTTPCore
import Logging
import OfflineQueue
import QueueSystemd
import ServiceLifecycle
import QueueTestSupport
import Testing
import TestSupport

/// A service that embeds the queue (not `sync`) gets systemd's notify protocol and watchdog
/// from `QueueSystemd`: a real unix datagram socket stands in for systemd's.
@Suite("QueueSystemd: READY, STATUS, WATCHDOG and STOPPING for a service that embeds the queue")
struct SystemdServiceTests {
    @Test("READY=1 with a status, WATCHDOG=1 while alive, STATUS= as entries are delivered, STOPPING=1 at shutdown")
    func notifies() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let socket = try NotifySocket()
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"]))
        #expect(notifier.watchdogTimeout == .seconds(2))
        #expect(SystemdNotifier(environment: [:]) == nil, "no NOTIFY_SOCKET, no notifier")
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"])?.watchdogTimeout == nil,
                "a watchdog meant for another process is not this one's")

        let queue = try makeQueue(path: folder.databasePath, server: server)
        for _ in 0..<3 { _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString) }
        let (group, running) = Self.run(queue, notifier: notifier)

        let ready = await socket.receive(containing: "READY=1", limit: .hangGuard)
        #expect(ready.last?.contains("STATUS=") == true, "READY=1 comes with the queue's status: \(ready)")
        #expect(await socket.receive(containing: "WATCHDOG=1", limit: .hangGuard).last?.contains("WATCHDOG=1") == true)
        let delivered = await socket.receive(containing: "pending 0 (due 0), in flight 0", limit: .hangGuard)
        #expect(delivered.last?.contains("here: 3 delivered in the last minute") == true, "\(delivered)")

        await group.triggerGracefulShutdown()
        #expect(await socket.receive(containing: "STOPPING=1", limit: .hangGuard).last?.contains("STOPPING=1") == true)
        try await running.value
        #expect(try await queue.counts().delivered == 3)
        await server.shutdown()
    }

    @Test("STATUS= names an origin a 429 with Retry-After paused, with its status")
    func statusNamesPausedOrigins() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        server.route("/busy") { _, writer in
            try await writer.respond(status: 429, headers: [HeaderField(name: "Retry-After", value: "600")])
        }
        let socket = try NotifySocket()
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path]))
        let queue = try makeQueue(path: folder.databasePath, server: server)
        _ = try await queue.enqueue(method: "POST", url: server.url("/busy").absoluteString)
        let (group, running) = Self.run(queue, notifier: notifier)
        let origin = server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let status = await socket.receive(containing: "origins: \(origin) paused until ", limit: .hangGuard)
        #expect(status.last?.contains("(429)") == true, "\(status)")
        await group.triggerGracefulShutdown()
        try await running.value
        await server.shutdown()
    }

    /// The queue's service and the systemd service beside it, in a group that runs until its
    /// graceful shutdown.
    static func run(_ queue: OfflineQueue, notifier: SystemdNotifier) -> (ServiceGroup, Task<Void, any Error>) {
        let logger = Logger(label: "test.systemd")
        let service = queue.service(pollInterval: .seconds(1), shutdownGrace: .seconds(1), logger: logger)
        let group = ServiceGroup(
            services: [service, SystemdQueueService(notifier: notifier, service: service, shutdownGrace: .seconds(1), logger: logger)],
            gracefulShutdownSignals: [], logger: logger
        )
        return (group, Task { try await group.run() })
    }
}
