import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The card's own use: short-lived processes enqueue (a CLI, a cron job, another service's
/// handler) and `sync run` delivers. Other processes run `sync enqueue` ten times a second
/// while one `sync run` serves, on a file and on PostgreSQL: everything arrives, once. (How
/// fast it arrives is a benchmark's question: `Tools/bench-wake-latency`.)
@Suite("sync run beside enqueuing processes", .serialized)
struct SyncSoakTests {
    @Test("other processes enqueue ten a second for 15 s while sync run serves: every entry delivered exactly once", arguments: [false, true])
    func enqueuersBesideService(postgres: Bool) async throws {
        let folder = try makeTemporaryFolder("sync-soak")
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = postgres ? try SyncCommandTests.Fixture.postgresSchema() : folder.appendingPathComponent("queue.db").path
        let server = try await TestHTTPServer.start()
        let keys = LockedBox<[String]>([])
        server.route("/soak") { request, writer in
            if let key = request.values(of: "Idempotency-Key").first { keys.withLock { $0.append(key) } }
            try await writer.respond(status: 200)
        }
        let sync = SyncRunner(database: database)
        // The service first, on an empty queue (it creates a file).
        let (service, _, _) = try sync.start(["run", "--no-reachability", "--poll", "5"])
        defer { service.signal(SIGKILL) }
        #expect(await eventually { (try? await sync("--json", "stats").status) == 0 })

        let count = 150
        let statuses = LockedBox<[Int32]>([])
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask {
                    let result = try? await sync("enqueue", "POST", server.url("/soak?n=\(index)").absoluteString)
                    statuses.withLock { $0.append(result?.status ?? -1) }
                }
                // Ten a second, each process on its own (a slow one does not hold the next).
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        #expect(statuses.current.count == count && statuses.current.allSatisfy { $0 == 0 }, "every enqueue exited 0")
        #expect(await eventually { keys.current.count >= count }, "all \(count) delivered, \(keys.current.count) so far")
        #expect(Set(keys.current).count == count && keys.current.count == count, "each exactly once")
        service.signal(SIGTERM)
        try await SyncRunner.wait(for: service, limit: .hangGuard)
        #expect(service.terminationStatus == 0)
        await server.shutdown()
    }
}
