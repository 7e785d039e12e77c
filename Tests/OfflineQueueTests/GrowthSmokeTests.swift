import CourierTesting
import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import PostgresNIO
import QueueTestSupport
import Testing
import TestSupport

/// The growth benchmark's workload (`courier-bench --growth`, `GrowthWorkload`) at 100,000
/// entries on each shared store: counts, not timings. A queue of 100,000 entries (three in four
/// delivered over the last week, a fifth pending, one in twenty dead), then enqueues, a drain,
/// and retention of the oldest day's delivered entries while a drain runs: retention removes
/// exactly those, nothing open is lost, the drain's pause is measured, and the space retention
/// freed takes as many entries again without the queue growing past a bound.
@Suite("Growth: the benchmark's workload at 100,000 entries")
struct GrowthSmokeTests {
    static let entries = 100_000
    static let week: TimeInterval = 7 * 86_400

    @Test("enqueue, drain, counts and retention while draining at 100,000 entries", arguments: StoreKind.shared)
    func smoke(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server, concurrency: 16)
            let workload = GrowthWorkload(queue: queue)
            let url = server.url("/echo").absoluteString

            // The fill: one entry enqueued, copied by SQL into as many rows as the queue needs
            // (every column as the queue wrote it, each its own key and group), then given the
            // states a week of draining leaves.
            let template = try await queue.enqueue(method: "POST", url: url, body: .data(Data("{\"n\":0}".utf8)), name: "POST /events")
            #expect(template.id == 1)
            try await copy(store, template: template.id, count: Self.entries - 1)
            let ids = Array(EntryID(1)...EntryID(Self.entries))
            let start = Date().timeIntervalSince1970 - Self.week - 7_200, step = Self.week / Double(Self.entries)
            try await settle(store, start: start, step: step)
            let delivered = ids.filter { $0 % 20 < 15 }.count, dead = ids.filter { $0 % 20 == 19 }.count
            let filled = try await workload.counts().counts
            #expect(filled.delivered == delivered && filled.dead == dead && filled.pending == Self.entries - delivered - dead, "\(filled)")

            let enqueues = try await workload.enqueue(1_000) { QueuedRequest(method: "POST", url: url, body: .data(Data("{\"e\":\($0)}".utf8))) }
            #expect(enqueues.count == 1_000 && enqueues.seconds > 0 && enqueues.p99 > 0)
            let drain = try await workload.drain(1_000, concurrency: 16)
            #expect(drain.count == 1_000 && drain.seconds > 0 && drain.longest >= 0)
            #expect(try await workload.overview().seconds > 0)

            // Retention of the oldest seventh's delivered entries while a drain runs.
            let cutoff = ids.sorted()[Self.entries / 7]
            let expected = ids.filter { $0 < cutoff && $0 % 20 < 15 }.count
            let before = try await workload.counts().counts
            let sizeBefore = try await size(store)
            let run = try await workload.retentionWhileDraining(now: Date(timeIntervalSince1970: start + Double(cutoff) * step + Self.week), concurrency: 16, warmup: 200, after: 100)
            #expect(run.summary.deletedEntries == expected, "exactly the delivered entries finished before the cut")
            #expect(run.longestPause >= 0 && run.seconds > 0, "the pause was measured: \(run)")
            let after = try await workload.counts().counts
            #expect(after.dead == before.dead, "dead letters stay")
            #expect(after.delivered == before.delivered - expected + run.delivered)
            #expect(after.pending + after.inflight == before.pending + before.inflight - run.delivered, "nothing open was lost")
            #expect(after.total == before.total - expected)

            // As many entries again: the space retention freed takes them.
            for first in stride(from: 0, to: expected, by: 5_000) {
                _ = try await queue.enqueue((first..<min(expected, first + 5_000)).map { QueuedRequest(method: "POST", url: url, body: .data(Data("{\"r\":\($0)}".utf8))) })
            }
            let sizeAfter = try await size(store)
            #expect(sizeAfter <= sizeBefore + sizeBefore / 10, "\(sizeBefore) bytes before retention, \(sizeAfter) after it and as many entries again")
            #expect(try await queue.counts().total == before.total)
            await queue.close()
            await server.shutdown()
        }
    }

    /// `count` copies of the entry `template`, ids after it: the columns as the queue wrote
    /// them, each its own idempotency key, four in five in one of 2,000 groups.
    func copy(_ store: TestStore, template: EntryID, count: Int) async throws {
        let insert = { @Sendable (columns: [String], table: String, series: String) -> String in
            let group = "CASE WHEN i % 5 = 0 THEN NULL ELSE 'device-' || (i % 2000) END"
            let values = columns.map { $0 == "idempotency_key" ? "t.idempotency_key || '-' || i" : $0 == "group_key" ? group : "t.\($0)" }
            return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(table) AS t, \(series) WHERE t.id = \(template) ORDER BY i"
        }
        if let schema = store.schema {
            _ = try await withPostgres(store.path) { connection in
                var columns: [String] = []
                for try await name in try await connection.query(PostgresQuery(unsafeSQL: """
                    SELECT column_name::text FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = 'entry' AND column_name <> 'id' ORDER BY ordinal_position
                    """), logger: testLogger).decode(String.self) { columns.append(name) }
                try await connection.query(PostgresQuery(unsafeSQL: insert(columns, "\"\(schema)\".entry", "generate_series(1, \(count)) AS s(i)")), logger: testLogger)
            }
        } else {
            try await DatabaseQueue(path: store.path).write { db in
                let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('entry') WHERE name <> 'id' ORDER BY cid")
                let series = "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < \(count)) SELECT i FROM s) AS s"
                try db.execute(sql: insert(columns, "entry", series))
            }
        }
    }

    /// The states by id: of every 20, 15 delivered and 1 dead (finished at `start + id * step`),
    /// the rest pending as enqueued.
    func settle(_ store: TestStore, start: Double, step: Double) async throws {
        let finished = "\(start) + id * \(step)"
        let delivered = "UPDATE §entry SET state = 'delivered', attempts = 1, last_status = 201, finished_at = \(finished), last_attempt_at = \(finished) WHERE id % 20 < 15"
        let dead = """
            UPDATE §entry SET state = 'dead', attempts = 8, last_status = 503, last_error = 'HTTP 503', dead_reason = 'attemptsExhausted',
                finished_at = \(finished), last_attempt_at = \(finished) WHERE id % 20 = 19
            """
        if let schema = store.schema {
            _ = try await withPostgres(store.path) { connection in
                for sql in [delivered, dead, "VACUUM ANALYZE §entry"] {
                    try await connection.query(PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "§", with: "\"\(schema)\".")), logger: testLogger)
                }
            }
        } else {
            try await DatabaseQueue(path: store.path).write { db in
                for sql in [delivered, dead] { try db.execute(sql: sql.replacingOccurrences(of: "§", with: "")) }
            }
        }
    }

    /// The bytes the queue takes: the file's pages (its free ones included), or the schema's
    /// tables with their indexes after a VACUUM (what autovacuum does in time: PostgreSQL reuses
    /// a deleted row's space once it has run).
    func size(_ store: TestStore) async throws -> Int {
        if let schema = store.schema {
            return try await withPostgres(store.path) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "VACUUM \"\(schema)\".entry"), logger: testLogger)
                return try await connection.query(PostgresQuery(unsafeSQL: """
                    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                    WHERE n.nspname = '\(schema)' AND c.relkind = 'r'
                    """), logger: testLogger).collect().first.map { Int(try $0.decode(Int64.self)) } ?? 0
            }
        }
        return try await DatabaseQueue(path: store.path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0) * (try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0)
        }
    }
}
