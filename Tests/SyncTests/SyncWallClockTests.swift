import Foundation
import GRDB
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync run` whose wall clock is days off the one of the process that stored a backoff: every
/// wait is on the boot clock, so it delivers when the backoff ends, neither days late nor early.
/// libfaketime moves only the wall clock of one process (`FAKETIME_DONT_FAKE_MONOTONIC=1`).
@Suite("sync run with its wall clock days off", .serialized)
struct SyncWallClockTests {
    /// Which process has its wall clock moved, and by how much.
    struct Case: Sendable, CustomTestStringConvertible {
        var storer: String?
        var server: String?
        var testDescription: String {
            "backoff stored with the wall clock \(storer ?? "right"), served with it \(server ?? "right")"
        }
    }

    @Test("each backoff ends on the boot clock: delivered after its due time, seconds after it, not at the hourly poll or days off", arguments: [
        Case(storer: nil, server: "-3d"), Case(storer: nil, server: "+3d"), Case(storer: "+3d", server: nil), Case(storer: "-3d", server: "+3d"),
    ])
    func backoffAcrossWallClocks(_ step: Case) async throws {
        let folder = try makeTemporaryFolder("sync-wall")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestHTTPServer.start()
        // The first attempt of each entry is refused for 6 seconds; later ones are accepted,
        // and their arrival is read on the boot clock.
        let arrivals = LockedBox<[String: Double]>([:])
        let refused = LockedBox<Set<String>>([])
        server.route("/later") { request, writer in
            let key = request.values(of: "Idempotency-Key").first ?? ""
            if refused.withLock({ $0.insert(key).inserted }) {
                try await writer.respond(status: 503, headers: [HeaderField(name: "Retry-After", value: "6")])
            } else {
                arrivals.withLock { $0[key] = $0[key] ?? BootClock.uptime() }
                try await writer.respond(status: 200)
            }
        }
        let sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        let storer = try faked(sync, by: step.storer)
        for _ in 0..<3 {
            let enqueued = try await storer("enqueue", "POST", server.url("/later").absoluteString)
            #expect(enqueued.status == 0, "\(enqueued.stderr)")
        }
        let first = try await storer("drain", "--no-reachability")
        #expect(first.stdout.contains("failed 3 (will retry)"), "\(first.stdout)\(first.stderr)")
        // When each is due, on the boot clock, as the storing drain recorded it.
        let due = try await DatabaseQueue(path: sync.database).read { db in
            try Row.fetchAll(db, sql: "SELECT idempotency_key, due_uptime FROM entry").reduce(into: [String: Double]()) { $0[$1[0]] = $1[1] }
        }
        #expect(due.count == 3)

        // Ready once it has drained (nothing due yet) and waits: from then on, only its wait for
        // the boot-clock due time can deliver the entries (its poll is an hour).
        let socket = try NotifySocket()
        var serving = try faked(sync, by: step.server)
        serving.environment["NOTIFY_SOCKET"] = socket.path
        let (service, _, _) = try serving.start(["run", "--no-reachability", "--poll", "3600"])
        defer { service.signal(SIGKILL) }
        #expect(await socket.receive(containing: "READY=1").last?.contains("READY=1") == true)
        let ready = BootClock.uptime()
        #expect(await eventually { arrivals.current.count == 3 }, "every entry delivered")
        service.signal(SIGTERM)
        await service.exited()
        for (key, dueUptime) in due {
            let arrived = try #require(arrivals.current[key])
            #expect(arrived >= dueUptime - 0.05, "\(key) not sent before its backoff ended (\(arrived - dueUptime) s)")
            // Seconds after its due time, or after the service was up if that came later: a wait
            // on the wall clock would be days off, and one left to the poll an hour late. Not a
            // latency figure: a loaded 2-core machine has been seen to take a second and more to
            // wake a debug build.
            let start = max(dueUptime, ready)
            #expect(arrived <= start + 10, "\(key) sent within seconds of its due time (\(arrived - start) s late; up \(ready - dueUptime) s after due)")
        }
        let listed = try await sync("--json", "list")
        for entry in try #require(try listed.json() as? [[String: Any]]) {
            #expect(entry["state"] as? String == "delivered")
        }
        await server.shutdown()
    }

    @Test("sync list shows a backoff stored by a process whose wall clock was 3 days ahead as due in seconds, not in 3 days")
    func listingByTheBootClock() async throws {
        let folder = try makeTemporaryFolder("sync-wall")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestHTTPServer.start()
        server.route("/busy") { _, writer in
            try await writer.respond(status: 503, headers: [HeaderField(name: "Retry-After", value: "30")])
        }
        let sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        let ahead = try faked(sync, by: "+3d")
        #expect(try await ahead("enqueue", "POST", server.url("/busy").absoluteString).status == 0)
        _ = try await ahead("drain", "--no-reachability")
        let listed = try await sync("--json", "list")
        let entry = try #require((try listed.json() as? [[String: Any]])?.first)
        let next = try #require((entry["next_attempt_at"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
        let wait = next.timeIntervalSinceNow
        #expect(wait > 20 && wait < 40, "due in about 30 s by this process's wall clock, shown \(wait) s away")
        let table = try await sync("list")
        #expect(!table.stdout.contains("3d"), "\(table.stdout)")
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        let statsNext = try #require((stats["next_attempt_at"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
        #expect(abs(statsNext.timeIntervalSince(next)) < 2)
        await server.shutdown()
    }

    /// `sync` run with libfaketime preloaded, only its wall clock moved by `step` (as `-3d`), or
    /// as is. Preloaded directly rather than through the `faketime` command, which runs `sync`
    /// as a child and does not pass SIGTERM on.
    private func faked(_ sync: SyncRunner, by step: String?) throws -> SyncRunner {
        guard let step else { return sync }
        let libraries = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? []
        guard let library = (["/usr/lib/faketime"] + libraries.map { "/usr/lib/\($0)/faketime" })
            .map({ $0 + "/libfaketime.so.1" }).first(where: FileManager.default.fileExists(atPath:)) else {
            throw TestServerError("libfaketime is not installed (apt-get install faketime; Tools/test installs it)")
        }
        var faked = sync
        faked.environment["LD_PRELOAD"] = library
        faked.environment["FAKETIME"] = step
        faked.environment["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        // Without it, libfaketime set up by hand (not by `faketime`) hides a Swift program's
        // arguments from it; names of no semaphore and no segment are enough.
        faked.environment["FAKETIME_SHARED"] = "courier-none courier-none"
        return faked
    }
}
