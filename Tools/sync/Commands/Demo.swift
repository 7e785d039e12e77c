import ArgumentParser
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import HTTPTypes
import Logging
import OfflineQueue
import Reachability

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A self-contained run: requests queued while the network is down, then drained when it is back.",
        discussion: """
            Starts a loopback HTTP server and a queue in a temporary folder, marks the network \
            down (a manual monitor), sends 24 requests (they are stored), brings the network back, \
            and drains with progress. Nothing outside this machine is contacted; the temporary \
            folder is removed at the end.

            With --keep PATH the queue is written to PATH (a new file) and kept, to look at \
            afterwards: `sync console --db PATH` serves it at http://127.0.0.1:9090/.

            Example:
              swift run sync demo
              swift run sync demo --keep /tmp/demo.db && swift run sync console --db /tmp/demo.db
            """
    )

    @Option(name: .long, help: "How many requests to queue.")
    var requests: Int = 24

    @Option(name: .long, help: ArgumentHelp("Keep the demo's queue at this path (a new file), to look at it afterwards.", valueName: "path"))
    var keep: String?

    func validate() throws {
        guard (1...100_000).contains(requests) else { throw ValidationError("--requests must be between 1 and 100000") }
        if let keep, FileManager.default.fileExists(atPath: keep) {
            throw ValidationError("--keep \(keep): a file is there already; the demo keeps a new queue only")
        }
    }

    func run() async throws {
        let server = try await DemoServer.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sync-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withTransport { transport in
            try await demo(server: server, folder: folder, transport: transport)
        }
        await server.shutdown()
    }

    private func demo(server: DemoServer, folder: URL, transport: AsyncHTTPClientTransport) async throws {
        let monitor = ManualMonitor(.offline(.noCarrier))
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        let configuration = QueueConfiguration(path: keep ?? folder.appendingPathComponent("queue.db").path)
        let queue: OfflineQueue
        do {
            queue = try OfflineQueue(configuration: configuration, client: client, monitor: monitor)
        } catch {
            throw sysExit(for: error)
        }

        print("loopback server on \(server.baseURL.absoluteString); queue at \(configuration.path)")
        print("network: \(monitor.status)")
        var queued = 0
        for index in 1...requests {
            let event = Request<Data>.post("/events?event=\(index)", body: .json(["event": index]))
            let outcome: SendOutcome
            do {
                outcome = try await queue.send(event, options: EnqueueOptions(group: index % 3 == 0 ? "orders" : nil))
            } catch .queue(let error) {
                throw sysExit(for: error)
            } catch {
                throw error
            }
            if case .queued = outcome { queued += 1 }
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
        let received = server.requests
        let keys = Set(received.compactMap { $0[configuration.idempotencyHeader] })
        print("drained in \(elapsed.formatted(.units(allowed: [.milliseconds], width: .abbreviated))): \(counts.delivered) delivered, \(counts.pending) pending, \(counts.dead) dead")
        print("the server saw \(received.count) requests with \(keys.count) distinct idempotency keys")
        await queue.close()
        guard counts.delivered == queued, counts.open == 0 else {
            complain("the demo did not deliver everything")
            throw SysExit.tryAgain
        }
        if let keep {
            print("kept the queue at \(keep); look at it in a browser: sync console --db \(keep), then http://127.0.0.1:9090/")
        }
    }
}
