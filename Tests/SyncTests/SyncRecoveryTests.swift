import CourierTesting
import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What `sync` leaves behind when it is killed, and what another drainer or a clock step does.
@Suite("sync: killed drainers, live drainers and clock steps", .serialized)
struct SyncRecoveryTests {
    /// A folder, a loopback server whose `/slow` holds each request for `hold` or until
    /// ``release()``, and the keys it received.
    struct Lab {
        let folder: URL
        let server: TestHTTPServer
        let sync: SyncRunner
        let keys = LockedBox<[String]>([])
        private let released = LockedBox(false)

        init(hold: Duration = .milliseconds(100)) async throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("sync-recovery-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            server = try await TestHTTPServer.start()
            sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
            let keys = self.keys
            let released = self.released
            server.route("/slow") { request, writer in
                _ = await eventually(hold) { released.current }
                if let key = request.values(of: "Idempotency-Key").first { keys.withLock { $0.append(key) } }
                try await writer.respond(status: 200)
            }
        }

        var url: String { server.url("/slow").absoluteString }

        /// Answers every request held now or later at once.
        func release() { released.withLock { $0 = true } }

        /// Enqueues `count` POSTs through the library, in one transaction.
        func fill(_ count: Int) async throws -> [Ticket] {
            let client = APIClient(configuration: ClientConfiguration(baseURL: server.baseURL), transport: StubTransport())
            let queue = try OfflineQueue(configuration: QueueConfiguration(path: sync.database), client: client)
            return try await queue.enqueue((0..<count).map { QueuedRequest(method: "POST", url: url, body: .data(Data("{\"n\":\($0)}".utf8))) })
        }

        func stats() async throws -> [String: Any] {
            try #require(try await sync("--json", "stats").json() as? [String: Any])
        }

        func finish() async {
            await server.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test("sync drain and sync run killed with SIGKILL mid-drain, 20 rounds: the next drain takes every stranded entry back at once and exits 0")
    func killedDrainers() async throws {
        let lab = try await Lab()
        let tickets = try await lab.fill(200)
        var orphanedSeen = 0
        for round in 0..<20 {
            let before = lab.keys.current.count
            let command = round.isMultiple(of: 2)
                ? ["drain", "--no-reachability", "--concurrency", "8"]
                : ["run", "--no-reachability", "--concurrency", "8"]
            let (process, _, _) = try lab.sync.start(command)
            _ = await eventually { lab.keys.current.count >= before + 4 || !process.isRunning }
            process.signal(SIGKILL)
            await process.exited()
            let stats = try await lab.stats()
            let inflight = stats["inflight"] as? Int ?? -1
            #expect(stats["inflight_orphaned"] as? Int == inflight, "round \(round): every entry in flight belongs to the dead drainer")
            orphanedSeen += inflight
        }
        #expect(orphanedSeen > 0, "kills landed while sends were in flight")
        // Leases are five minutes long: only owner liveness can make this drain finish now.
        let drain = try await lab.sync("drain", "--no-reachability", "--concurrency", "8")
        #expect(drain.status == 0, "\(drain.stdout)\(drain.stderr)")
        let stats = try await lab.stats()
        #expect(stats["pending"] as? Int == 0)
        #expect(stats["inflight"] as? Int == 0)
        #expect(stats["delivered"] as? Int == 200)
        #expect(Set(lab.keys.current) == Set(tickets.map(\.idempotencyKey)), "every key reached the server")
        let integrity = try await DatabaseQueue(path: lab.sync.database).read { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"])
        await lab.finish()
    }

    @Test("sync drain while a live sync run holds entries exits 75 and names the process")
    func liveDrainerElsewhere() async throws {
        // Held until the drain below has run, however slowly it starts.
        let lab = try await Lab(hold: .hangGuard)
        _ = try await lab.fill(4)
        let (service, _, _) = try lab.sync.start(["run", "--no-reachability", "--concurrency", "4"])
        #expect(await eventually { (try? await lab.stats()["inflight"] as? Int) == 4 })
        let drain = try await lab.sync("drain", "--no-reachability")
        #expect(drain.status == 75)
        #expect(drain.stdout.contains("4 entries are in flight under another drainer (process \(service.processIdentifier)"), "\(drain.stdout)")
        let stats = try await lab.stats()
        #expect(stats["inflight_orphaned"] as? Int == 0)
        lab.release()
        service.signal(SIGTERM)
        await service.exited()
        await lab.finish()
    }

    @Test("entries enqueued with the clock 8 days behind, 3 days ahead, or only the wall clock moved are delivered, not expired", arguments: [
        ["-f", "-8d"], ["-f", "+3d"], ["-f", "-8d", "wall-only"],
    ])
    func clockStepBetweenEnqueueAndDrain(step: [String]) async throws {
        let lab = try await Lab(hold: .zero)
        var enqueuer = lab.sync
        enqueuer.launcher = [try fakeTime()] + step.filter { $0 != "wall-only" }
        if step.contains("wall-only") { enqueuer.environment["FAKETIME_DONT_FAKE_MONOTONIC"] = "1" }
        for _ in 0..<3 {
            let result = try await enqueuer("enqueue", "POST", lab.url)
            #expect(result.status == 0, "\(result.stderr)")
        }
        let drain = try await lab.sync("drain", "--no-reachability")
        #expect(drain.status == 0, "\(drain.stdout)\(drain.stderr)")
        #expect(drain.stdout.contains("delivered 3, failed 0 (will retry), dead 0, remaining 0"), "\(drain.stdout)")
        #expect(lab.keys.current.count == 3)
        await lab.finish()
    }

    @Test("a wall-clock step of 3 days forward during a drain: every entry is sent once")
    func clockStepDuringDrain() async throws {
        let lab = try await Lab(hold: .milliseconds(300))
        let tickets = try await lab.fill(12)
        let stepFile = lab.folder.appendingPathComponent("faketime").path
        try "+0d\n".write(toFile: stepFile, atomically: true, encoding: .utf8)
        var drainer = lab.sync
        drainer.launcher = [try fakeTime(), "-f", "+0d"]
        drainer.environment = ["FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_TIMESTAMP_FILE": stepFile, "FAKETIME_CACHE_DURATION": "1"]
        let (process, out, _) = try drainer.start(["drain", "--no-reachability", "--concurrency", "4"])
        let output = readToEnd(out.fileHandleForReading)
        #expect(await eventually { lab.keys.current.count >= 2 })
        try "+3d\n".write(toFile: stepFile, atomically: true, encoding: .utf8)
        await process.exited()
        let text = String(decoding: await output.value, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(lab.keys.current.sorted() == tickets.map(\.idempotencyKey).sorted(), "each entry sent exactly once")
        await lab.finish()
    }

    private func fakeTime() throws -> String {
        guard let path = ["/usr/bin/faketime", "/usr/local/bin/faketime"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw TestServerError("faketime is not installed (apt-get install faketime; Tools/test installs it)")
        }
        return path
    }
}
