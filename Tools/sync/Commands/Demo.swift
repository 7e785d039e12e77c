import ArgumentParser
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import Logging
import OfflineQueue
import Reachability
import TestSupport

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A self-contained run: requests queued while the network is down, then drained when it is back.",
        discussion: """
            Starts a loopback HTTP server and a queue in a temporary folder, marks the network \
            down (a manual monitor), sends 24 requests (they are stored), brings the network back, \
            and drains with progress. Nothing outside this machine is contacted; the temporary \
            folder is removed at the end.

            Example:
              swift run sync demo
            """
    )

    @Option(name: .long, help: "How many requests to queue.")
    var requests: Int = 24

    func validate() throws {
        guard (1...100_000).contains(requests) else { throw ValidationError("--requests must be between 1 and 100000") }
    }

    func run() async throws {
        let server = try await TestHTTPServer.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sync-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = AsyncHTTPClientTransport()
        let monitor = ManualMonitor(.offline(.noCarrier))
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        let queue: OfflineQueue
        do {
            queue = try OfflineQueue(configuration: QueueConfiguration(path: folder.appendingPathComponent("queue.db").path), client: client, monitor: monitor)
        } catch {
            throw sysExit(for: error)
        }

        print("loopback server on \(server.baseURL.absoluteString); queue in \(folder.path)")
        print("network: \(monitor.status)")
        var queued = 0
        for index in 1...requests {
            let event = Request<Data>.post("/echo?event=\(index)", body: .json(["event": index]))
            if case .queued = try await queue.send(event, options: EnqueueOptions(group: index % 3 == 0 ? "orders" : nil)) { queued += 1 }
        }
        print("sent \(requests) requests while offline: \(queued) stored, \(server.requests.count) reached the server")

        let progress = ProgressBar(total: requests)
        let events = queue.events()
        let done = Task {
            var delivered = 0
            for await event in events {
                if case .delivered = event {
                    delivered += 1
                    progress.delivered()
                    if delivered == queued { break }
                }
            }
        }
        var logger = Logger(label: "courier.demo")
        logger.logLevel = .warning
        let service = queue.service(pollInterval: .seconds(3600), logger: logger)
        let running = Task { try await service.run() }
        try await Task.sleep(for: .milliseconds(300))
        let back = ContinuousClock.now
        monitor.status = .online(interface: "demo0", family: .ipv4)
        print("network: \(monitor.status)")
        let timeout = Task {
            try await Task.sleep(for: .seconds(60))
            done.cancel()
        }
        await done.value
        timeout.cancel()
        progress.finish()
        let elapsed = ContinuousClock.now - back
        service.shutDown()
        try await running.value

        let counts = try await queue.counts()
        let keys = Set(server.requests.compactMap { $0.values(of: "Idempotency-Key").first })
        print("drained in \(elapsed.formatted(.units(allowed: [.milliseconds], width: .abbreviated))): \(counts.delivered) delivered, \(counts.pending) pending, \(counts.dead) dead")
        print("the server saw \(server.requests.count) requests with \(keys.count) distinct idempotency keys")
        try? await transport.shutdown()
        await server.shutdown()
        guard counts.delivered == queued, counts.open == 0 else {
            complain("the demo did not deliver everything")
            throw SysExit.tryAgain
        }
    }
}
