import Foundation
import GRDB
import GRDBSQLite
import HTTPCore
@testable import OfflineQueue
@testable import OfflineQueueCore
@testable import OfflineQueuePostgres
import PostgresNIO
import QueueTestSupport
import Testing
import TestSupport

/// What a claim reads while entries wait for their parents (issue 48, part 5): entries that
/// wait are `blocked`, outside the claim order's index, so a claim reads the rows it read
/// before they came, however many there are. Counted, not timed: SQLite's virtual-machine
/// steps of the claim's statements and the claim's query plan; the live rows PostgreSQL's
/// drain statement (`settle_and_claim`, under `EXPLAIN (ANALYZE, BUFFERS)`) fetches.
///
/// Small in every run. `COURIER_CLAIM_COST_ENTRIES=1000000` makes the queue of the measurement
/// in Docs/Benchmarks.md (a tenth of it waiting for parents), and prints what it counts.
@Suite("What a claim reads while entries wait for their parents")
struct ClaimCostTests {
    /// The queue's size, a tenth of it waiting for parents.
    static let entries = ProcessInfo.processInfo.environment["COURIER_CLAIM_COST_ENTRIES"].flatMap(Int.init) ?? 4_000
    /// The claim's size: what a drain of concurrency 16 claims at once.
    static let claimLimit = 32

    @Test("SQLite: a claim takes as many steps with a tenth of the queue waiting for parents as without, walking the claim order's index")
    func sqlite() async throws {
        let store = try TestStore(.sqlite)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            let parents = try await Self.fill(queue, server: server)
            try await Self.settleMost(store)
            let before = try Self.sqliteClaim(path: store.path)
            var overview = try await Self.timed { _ = try await queue.overview() }
            try await Self.enqueueWaiting(queue, server: server, parents: parents)
            let after = try Self.sqliteClaim(path: store.path)
            overview = min(overview, try await Self.timed { _ = try await queue.overview() })
            let counts = try await queue.counts()
            print("""
                claim cost, SQLite, \(counts.total) entries (\(counts.blocked) waiting for parents, \(counts.pending) pending, \
                \(counts.delivered) delivered): a claim of \(after.claimed): \(before.steps) VM steps before the waiting entries, \
                \(after.steps) with them; rows of the claim order walked \(before.fullScans) / \(after.fullScans); overview \
                \(String(format: "%.1f", overview * 1000)) ms (this build); plan: \(after.plan.joined(separator: " | "))
                """)
            #expect(counts.blocked == Self.entries / 10)
            #expect(before.claimed == Self.claimLimit && after.claimed == Self.claimLimit)
            #expect(after.steps == before.steps, "the entries that wait are not read by a claim")
            #expect(after.fullScans == before.fullScans, "the claim order's index walked as far")
            #expect(after.plan.contains { $0.contains("USING INDEX entry_pending") }, "\(after.plan)")
            // The leases (the entries in flight, a few) are walked for a group head's group; no
            // other table is.
            #expect(!after.plan.contains { $0.hasPrefix("SCAN") && !$0.contains("INDEX") && $0 != "SCAN l" }, "no table scan: \(after.plan)")

            // Flow control (issue 49): a limit that does not bind (another origin's) walks the
            // same rows; one that binds on the claim's origin takes what its bucket allows.
            try await queue.store.storeOriginLimits([try FlowControl.OriginLimit("https://elsewhere.test", requestsPerSecond: 1000, burst: 1000)], now: QueueClock.system.now())
            let unbound = try Self.sqliteClaim(path: store.path)
            let origin = server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            try await queue.store.storeOriginLimits([try FlowControl.OriginLimit(origin, requestsPerSecond: 1, burst: 10)], now: QueueClock.system.now())
            let bound = try Self.sqliteClaim(path: store.path)
            print("""
                claim cost, SQLite, with flow rows: a limit on another origin: a claim of \(unbound.claimed), \(unbound.steps) VM steps, \
                \(unbound.fullScans) rows walked; a limit of 10 at once on the claim's origin: a claim of \(bound.claimed), \(bound.steps) VM steps, \
                \(bound.fullScans) rows walked (at most \(Self.claimLimit + SQLiteQueueStore.flowWalk) past the first)
                """)
            #expect(unbound.claimed == Self.claimLimit && unbound.fullScans == after.fullScans, "a limit that does not bind walks as far")
            #expect(bound.claimed == 10 && bound.fullScans <= after.fullScans + Int64(SQLiteQueueStore.flowWalk + Self.claimLimit))
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("PostgreSQL: the drain's statement fetches as many rows with a tenth of the queue waiting for parents as without, and scans no table")
    func postgres() async throws {
        guard TestStore.postgresURL != nil else { return }
        let store = try TestStore(.postgres)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            let parents = try await Self.fill(queue, server: server)
            try await Self.settleMost(store)
            let before = try await Self.postgresClaim(queue, store: store)
            try await Self.enqueueWaiting(queue, server: server, parents: parents)
            let after = try await Self.postgresClaim(queue, store: store)
            let counts = try await queue.counts()
            print("""
                claim cost, PostgreSQL, \(counts.total) entries (\(counts.blocked) waiting for parents): a claim of \
                \(after.claimed): live rows fetched \(before.rows) before the waiting entries, \(after.rows) with them; \
                index entries returned \(before.byRelation.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) \
                / \(after.byRelation.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); \
                shared buffers \(before.buffers) / \(after.buffers) (\(after.read) read from outside the cache); \(after.plan)
                """)
            #expect(counts.blocked == Self.entries / 10)
            #expect(before.claimed == Self.claimLimit && after.claimed == Self.claimLimit)
            #expect(after.rows == before.rows, "the entries that wait are not read by a claim")
            #expect(before.scanned == 0 && after.scanned == 0, "no scan of the table itself")
            await queue.close()
            await server.shutdown()
        }
    }

    // MARK: - The queue

    /// A queue of ``entries`` less a tenth: a hundred parents not due for a day (in a backoff,
    /// say), then entries due now, some in groups, enqueued in batches. Returns the parents.
    static func fill(_ queue: OfflineQueue, server: TestHTTPServer) async throws -> [EntryID] {
        let url = server.url("/echo").absoluteString
        let later = Date().addingTimeInterval(86_400)
        let parents = try await queue.enqueue((0..<100).map { index in
            QueuedRequest(method: "POST", url: url + "?parent=\(index)", options: EnqueueOptions(notBefore: later))
        }).map(\.id)
        let others = entries - entries / 10 - parents.count
        for start in stride(from: 0, to: others, by: 10_000) {
            _ = try await queue.enqueue((start..<min(others, start + 10_000)).map { index in
                QueuedRequest(
                    method: "POST", url: url + "?n=\(index)", headers: [("Content-Type", "application/json")],
                    body: .data(Data(#"{"n":\#(index),"note":"an entry of the claim-cost queue"}"#.utf8)),
                    options: EnqueueOptions(group: index % 5 == 0 ? "device-\(index % 2_000)" : nil)
                )
            })
        }
        return parents
    }

    /// What a queue that has worked for days holds: of the entries after the parents, seven in
    /// ten delivered, one in twenty dead, the rest pending (due now). By SQL, as a drain would
    /// leave them: draining them to a server would measure the drain.
    static func settleMost(_ store: TestStore) async throws {
        let statements = [
            "UPDATE §entry SET state = 'delivered', attempts = 1, last_status = 201, finished_at = created_at + 1, last_attempt_at = created_at + 1 WHERE id > 100 AND id % 10 < 7",
            "UPDATE §entry SET state = 'dead', attempts = 1, last_status = 422, dead_reason = 'rejected', finished_at = created_at + 1 WHERE id > 100 AND id % 20 = 7",
        ]
        if let schema = store.schema {
            try await withPostgres(store.path) { connection in
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement.replacingOccurrences(of: "§", with: "\"\(schema)\".")), logger: testLogger)
                }
                try await connection.query(PostgresQuery(unsafeSQL: "VACUUM ANALYZE \"\(schema)\".entry"), logger: testLogger)
            }
        } else {
            try await DatabaseQueue(path: store.path).write { db in
                for statement in statements { try db.execute(sql: statement.replacingOccurrences(of: "§", with: "")) }
            }
        }
    }

    /// A tenth of ``entries``, each waiting for one of `parents`, at a priority above every other
    /// entry's (first in the claim order, were they in it), half of them in groups.
    static func enqueueWaiting(_ queue: OfflineQueue, server: TestHTTPServer, parents: [EntryID]) async throws {
        let url = server.url("/echo").absoluteString
        let count = entries / 10
        for start in stride(from: 0, to: count, by: 10_000) {
            _ = try await queue.enqueue((start..<min(count, start + 10_000)).map { index in
                QueuedRequest(
                    method: "POST", url: url + "?child=\(index)",
                    options: EnqueueOptions(group: index % 2 == 0 ? "device-\(index % 2_000)" : nil, priority: 10, after: [parents[index % parents.count]])
                )
            })
        }
    }

    static func timed(_ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        return (ContinuousClock.now - start).seconds
    }

    // MARK: - Counting

    /// The claim as the store runs it, on a connection of its own, in a transaction rolled
    /// back: the virtual-machine steps of its statements (the lapsed leases' delete, the
    /// claim's select, the leases' insert) and the rows of an index walked in order (SQLite's
    /// full-scan steps: the claim order's index, walked past entries not due), counted on its
    /// second run (the first prepares them), and the select's query plan.
    static func sqliteClaim(path: String) throws -> (steps: Int64, fullScans: Int64, claimed: Int, plan: [String]) {
        try DatabaseQueue(path: path).inDatabase { db in
            let connection = try #require(db.sqliteConnection)
            func claim() throws -> Int {
                try db.execute(sql: "BEGIN IMMEDIATE")
                defer { try? db.execute(sql: "ROLLBACK") }
                var result = ClaimResult()
                return try SQLiteQueueStore.claim(
                    db, limit: claimLimit, owner: "claim-cost", now: QueueClock.system.now(), lease: .seconds(60), attemptedSince: nil, databasePath: path,
                    flow: &result
                ).count
            }
            func statuses(_ counter: Int32, reset: Bool) -> Int64 {
                var total: Int64 = 0
                var statement = sqlite3_next_stmt(connection, nil)
                while let current = statement {
                    total += Int64(sqlite3_stmt_status(current, counter, reset ? 1 : 0))
                    statement = sqlite3_next_stmt(connection, current)
                }
                return total
            }
            _ = try claim()
            _ = statuses(SQLITE_STMTSTATUS_VM_STEP, reset: true)
            _ = statuses(SQLITE_STMTSTATUS_FULLSCAN_STEP, reset: true)
            let claimed = try claim()
            let steps = statuses(SQLITE_STMTSTATUS_VM_STEP, reset: false)
            let fullScans = statuses(SQLITE_STMTSTATUS_FULLSCAN_STEP, reset: false)
            // The claim's select, as prepared, explained.
            var plan: [String] = []
            var statement = sqlite3_next_stmt(connection, nil)
            while let current = statement {
                let sql = String(cString: sqlite3_sql(current))
                if sql.contains("INDEXED BY entry_pending"), sql.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("SELECT") {
                    // Prepared by hand: the plan does not depend on the values, left unbound.
                    var explain: OpaquePointer?
                    #expect(sqlite3_prepare_v2(connection, "EXPLAIN QUERY PLAN " + sql, -1, &explain, nil) == SQLITE_OK)
                    while sqlite3_step(explain) == SQLITE_ROW {
                        plan.append(String(cString: sqlite3_column_text(explain, 3)))
                    }
                    sqlite3_finalize(explain)
                }
                statement = sqlite3_next_stmt(connection, current)
            }
            return (steps, fullScans, claimed, plan)
        }
    }

    /// The drain's one statement as the store sends it, claiming, explained with `ANALYZE,
    /// BUFFERS` in a transaction rolled back; counted on its second run (the first plans the
    /// function's statements), from PostgreSQL's counts of this transaction:
    /// - `rows`: the live rows the statement fetched through the schema's indexes
    ///   (`pg_stat_get_xact_tuples_fetched`, counted on each index), what a claim reads;
    /// - `scanned`: rows of `entry` read by a scan of the table itself (none is expected);
    /// - `byRelation`: the entries each index returned (`pg_stat_get_xact_tuples_returned`),
    ///   shown only: an index also returns the entries of row versions that vacuum has not
    ///   removed yet (another test's open transaction holds it back), which a claim skips;
    /// - the buffers the whole statement touched, those read from outside PostgreSQL's cache,
    ///   and the plan's first line.
    static func postgresClaim(
        _ queue: OfflineQueue, store: TestStore
    ) async throws -> (rows: Int, scanned: Int, byRelation: [String: Int], buffers: Int, read: Int, claimed: Int, plan: String) {
        let postgres = try #require(queue.store as? PostgresQueueStore)
        let schema = try #require(store.schema)
        try await postgres.takeOwnership()
        let fleet = try await postgres.fleetTime(QueueClock.system.now())
        var query = postgres.commitQuery([], fleet: fleet, reclaim: false, claimLimit: claimLimit, lease: .seconds(60), since: nil)
        query.sql = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) " + query.sql
        var scans = PostgresQuery(unsafeSQL: """
            SELECT c.relname, pg_stat_get_xact_tuples_returned(c.oid), pg_stat_get_xact_tuples_fetched(c.oid)
            FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'i')
            """)
        scans.binds.append(schema)
        return try await withPostgres(store.path) { connection in
            // The row versions earlier claims left (rolled back) gone, as autovacuum would.
            try await connection.query(PostgresQuery(unsafeSQL: "VACUUM \"\(schema)\".entry"), logger: testLogger)
            var last: (rows: Int, scanned: Int, byRelation: [String: Int], buffers: Int, read: Int, claimed: Int, plan: String) = (0, 0, [:], 0, 0, 0, "")
            for _ in 0..<2 {
                try await connection.query("BEGIN", logger: testLogger)
                let lines = try await connection.query(query, logger: testLogger).collect().map { try $0.decode(String.self) }
                var byRelation: [String: Int] = [:]
                var fetched = 0, scanned = 0
                for row in try await connection.query(scans, logger: testLogger).collect() {
                    // A row fetched through an index is counted on the index; a table's
                    // returned rows are those its own scans read.
                    let (name, returned, rowsFetched) = try row.decode((String, Int64, Int64).self)
                    fetched += Int(rowsFetched)
                    if name == "entry" {
                        scanned = Int(returned)
                    } else if returned > 0 {
                        byRelation[name] = Int(returned)
                    }
                }
                try await connection.query("ROLLBACK", logger: testLogger)
                let top = lines.first ?? ""
                let buffers = lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("Buffers:") } ?? ""
                let number = { (name: String) -> Int in
                    guard let range = buffers.range(of: name + "=") else { return 0 }
                    return Int(buffers[range.upperBound...].prefix { $0.isNumber }) ?? 0
                }
                let claimed = top.range(of: "rows=").map { Int(top[$0.upperBound...].prefix { $0.isNumber }) ?? 0 } ?? 0
                last = (fetched, scanned, byRelation, number("hit") + number("read"), number("read"), claimed, top)
            }
            return last
        }
    }
}
