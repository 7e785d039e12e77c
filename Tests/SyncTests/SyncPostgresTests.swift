import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync` on a PostgreSQL queue: several `sync run` sharing it, woken by an enqueue from
/// anywhere; a server that cannot be reached; a URL that is never a path.
@Suite("sync on PostgreSQL: a shared queue")
struct SyncPostgresTests {
    @Test("two idle `sync run` (poll an hour): an enqueue from a third process reaches the server at once, woken by NOTIFY, and is sent once")
    func notifyWakesIdleDrainers() async throws {
        let database = try SyncCommandTests.Fixture.postgresSchema()
        let server = try await TestHTTPServer.start()
        let arrived = LockedBox<[String]>([])
        server.route("/event") { request, writer in
            arrived.withLock { $0.append(request.values(of: "Idempotency-Key").first ?? "") }
            try await writer.respond(status: 200)
        }
        let sync = SyncRunner(database: database)
        // The schema exists before the services start: an enqueue that creates it.
        #expect(try await sync("enqueue", "POST", server.url("/event?n=0").absoluteString).status == 0)
        let services = try (0..<2).map { _ in try sync.start(["run", "--no-reachability", "--poll", "3600", "--log-level", "debug"]) }
        let logs = services.map { SyncMetricsTests.Collected($0.2.fileHandleForReading) }
        #expect(await eventually { arrived.current.count == 1 }, "the first entry is drained at start")
        // Both services have drained once and so listen; wait until both are idle.
        #expect(await eventually { logs.allSatisfy { $0.text.current.contains("idle until woken") } }, "both services idle")
        let enqueued = ContinuousClock.now
        let result = try await sync("--json", "enqueue", "POST", server.url("/event?n=1").absoluteString)
        #expect(result.status == 0)
        #expect(await eventually { arrived.current.count == 2 }, "delivered though no service polls for an hour")
        print("enqueue in a third process → delivered in \(ContinuousClock.now - enqueued)")
        #expect(Set(arrived.current).count == 2, "each entry sent once")
        for (process, _, _) in services { process.signal(SIGTERM) }
        for (process, _, _) in services {
            #expect(await process.exited(limit: .hangGuard))
            #expect(process.terminationStatus == 0)
        }
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(stats["delivered"] as? Int == 2)
        #expect(stats["inflight"] as? Int == 0)
        await server.shutdown()
    }

    @Test("a server that cannot be reached: one line, exit 69, no password printed, nothing made in the working folder")
    func unreachable() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sync-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = try unusedLoopbackPort()
        var sync = SyncRunner(database: "postgres://courier:hunter2-secret@127.0.0.1:\(port)/courier")
        sync.directory = folder
        for arguments in [["stats"], ["enqueue", "POST", "http://127.0.0.1:9/x"], ["list"], ["drain", "--no-reachability"]] {
            let result = try await sync.run(arguments)
            #expect(result.status == 69, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            #expect(result.stderr.contains("postgres://courier@127.0.0.1:\(port)/courier"))
            #expect(!(result.stdout + result.stderr).contains("hunter2"), "the password is never printed")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "no folder named postgres: or anything else")
        // Through SYNC_DB, the same.
        var viaEnvironment = SyncRunner(database: "")
        viaEnvironment.environment["SYNC_DB"] = "postgresql://courier:hunter2-secret@127.0.0.1:\(port)/courier"
        let result = try await viaEnvironment.run(["stats"])
        #expect(result.status == 69)
        #expect(!result.stderr.contains("hunter2"))
    }

    @Test("SYNC_DB names a PostgreSQL queue as --db does; a bad URL is a clear usage error")
    func environmentAndBadURL() async throws {
        let database = try SyncCommandTests.Fixture.postgresSchema()
        var sync = SyncRunner(database: "")
        sync.environment["SYNC_DB"] = database
        #expect(try await sync.run(["enqueue", "POST", "http://127.0.0.1:9/x"]).status == 0)
        let stats = try #require(try await sync.run(["--json", "stats"]).json() as? [String: Any])
        #expect(stats["pending"] as? Int == 1)
        let bad = try await SyncRunner(database: database.replacingOccurrences(of: "schema=", with: "schema=no-such;")).run(["stats"])
        #expect(bad.status == 65, "\(bad.stderr)")
        #expect(bad.stderr.contains("schema"))
    }

}
