// The growth benchmark's stores (`courier-bench --growth`, GrowthBench.swift): a SQLite file
// or a PostgreSQL schema, filled fast by one INSERT … SELECT per 100,000 rows that copies a
// row the queue itself wrote (every column as `OfflineQueue.enqueue` stores it) and gives
// each copy its own key, URL, group, name and the state a drain and time would leave; and
// their size.
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import GRDBSQLite
import HTTPCore
import Logging
import OfflineQueue
import OfflineQueuePostgres
import PostgresNIO

/// A store the growth benchmark fills and measures.
protocol GrowthStore: Sendable {
    /// What the figures call it (`SQLite`, `PostgreSQL`).
    var label: String { get }
    /// Opens the queue (made on first use) with `client`.
    func open(client: APIClient) async throws -> OfflineQueue
    /// Copies the template row `template` (an entry the queue stored) into rows `range` of the
    /// fill, with their mix (``GrowthMix``).
    func fill(_ range: Range<Int>, template: EntryID, mix: GrowthMix) async throws
    /// Bytes the queue takes (the file's pages, not its WAL; the schema's tables with their
    /// indexes and TOAST), and bytes of it free for reuse (SQLite's free pages; 0 on PostgreSQL).
    func size() async throws -> (bytes: Int, free: Int)
    /// Removes what the benchmark made (unless kept).
    func remove() async
}

/// The mix of the fill, by the fill's index `i` (from 1): of every 20, 15 delivered, 4 pending
/// (due), 1 dead after its attempts; four in five in one of 2,000 groups; the delivered and dead
/// ones finished at `start + i * step` (the queue spans a week once full).
struct GrowthMix: Sendable {
    let start: Double
    let step: Double
    let url: String

    /// Rows of the fill among indexes `range`, by state.
    static func expected(_ range: Range<Int>) -> (delivered: Int, pending: Int, dead: Int) {
        var delivered = 0, pending = 0, dead = 0
        for i in range {
            switch i % 20 { case 0..<15: delivered += 1; case 15..<19: pending += 1; default: dead += 1 }
        }
        return (delivered, pending, dead)
    }

    /// The finishing time of fill index `i`.
    func finished(_ i: Int) -> Double { start + Double(i) * step }

    /// Each column's expression over the fill index `i` and the template `t`; columns not
    /// named are copied from the template. `hex` turns `i` into 12 hex digits.
    func overrides(hex: String) -> [String: String] {
        let delivered = "i % 20 < 15", dead = "i % 20 = 19", finishedAt = "(\(start) + i * \(step))"
        let names = ConsoleBench.names
        let name = "CASE i % \(names.count) " + names.enumerated().map { "WHEN \($0.offset) THEN '\($0.element)'" }.joined(separator: " ") + " END"
        return [
            "idempotency_key": "'00000000-0000-4000-8000-' || \(hex)",
            "url": "'\(url)/' || i",
            "name": name,
            "group_key": "CASE WHEN i % 5 = 0 THEN NULL ELSE 'device-' || ((i * 7919) % \(ConsoleBench.groups)) END",
            "state": "CASE WHEN \(delivered) THEN 'delivered' WHEN \(dead) THEN 'dead' ELSE 'pending' END",
            "attempts": "CASE WHEN \(delivered) THEN 1 WHEN \(dead) THEN 8 ELSE 0 END",
            "created_at": "CASE WHEN \(delivered) OR \(dead) THEN \(finishedAt) - 3600 ELSE t.created_at END",
            "budget_from": "CASE WHEN \(delivered) OR \(dead) THEN \(finishedAt) - 3600 ELSE t.budget_from END",
            "next_attempt_at": "CASE WHEN \(delivered) OR \(dead) THEN \(finishedAt) - 3600 ELSE t.next_attempt_at END",
            "finished_at": "CASE WHEN \(delivered) OR \(dead) THEN \(finishedAt) END",
            "last_attempt_at": "CASE WHEN \(delivered) OR \(dead) THEN \(finishedAt) END",
            "last_status": "CASE WHEN \(delivered) THEN 201 WHEN \(dead) THEN 503 END",
            "last_error": "CASE WHEN \(dead) THEN 'HTTP 503' END",
            "response_excerpt": "CASE WHEN \(dead) THEN 'Service Unavailable' END",
            "dead_reason": "CASE WHEN \(dead) THEN 'attemptsExhausted' END",
        ]
    }

    /// `INSERT INTO table (columns) SELECT … FROM template, series`.
    func insert(table: String, columns: [String], series: String, template: String, hex: String) -> String {
        let overrides = overrides(hex: hex)
        let values = columns.map { overrides[$0] ?? "t.\($0)" }
        return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(template) AS t, \(series)"
    }
}

// MARK: - SQLite

struct SQLiteGrowthStore: GrowthStore {
    let path: String
    let keep: Bool
    var label: String { "SQLite" }

    /// A store at `path`, emptied first unless `reuse` (a file kept by an earlier `--keep` run,
    /// measured again as it is).
    init(path: String, keep: Bool, reuse: Bool = false) {
        self.path = path
        self.keep = keep
        guard !reuse else { return }
        for suffix in ["", "-wal", "-shm", ".reserve"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try? FileManager.default.removeItem(atPath: path + ".bodies")
    }

    /// The port in the URL of the last entry of the file at `path` (`--reuse`), which needs it.
    static func lastPort(path: String?) throws -> Int {
        guard let path, FileManager.default.fileExists(atPath: path) else { throw BenchError("--reuse needs --path FILE, a file a --keep run left") }
        let url = try GrowthSQLite.with(path) { db in try GrowthSQLite.strings(db, "SELECT url FROM entry ORDER BY id DESC LIMIT 1") }.first
        guard let port = url.flatMap({ URL(string: $0)?.port }) else { throw BenchError("--reuse: no entry with a port in \(path)") }
        return port
    }

    func open(client: APIClient) async throws -> OfflineQueue {
        try OfflineQueue(configuration: QueueConfiguration(path: path, durability: .normal, concurrency: 16), client: client)
    }

    func fill(_ range: Range<Int>, template: EntryID, mix: GrowthMix) async throws {
        try GrowthSQLite.with(path) { db in
            let columns = try GrowthSQLite.strings(db, "SELECT name FROM pragma_table_info('entry') WHERE name <> 'id' ORDER BY cid")
            try GrowthSQLite.exec(db, "PRAGMA busy_timeout = 60000")
            for low in stride(from: range.lowerBound, to: range.upperBound, by: 100_000) {
                let high = min(range.upperBound, low + 100_000)
                let series = "(WITH RECURSIVE s(i) AS (SELECT \(low) UNION ALL SELECT i + 1 FROM s WHERE i < \(high - 1)) SELECT i FROM s) AS s"
                let template = "(SELECT * FROM entry WHERE id = \(template))"
                try GrowthSQLite.exec(db, "BEGIN IMMEDIATE")
                try GrowthSQLite.exec(db, mix.insert(table: "entry", columns: columns, series: series, template: template, hex: "printf('%012x', i)"))
                try GrowthSQLite.exec(db, "COMMIT")
            }
        }
    }

    func size() async throws -> (bytes: Int, free: Int) {
        try GrowthSQLite.with(path) { db in
            let pages = try GrowthSQLite.int(db, "PRAGMA page_count"), size = try GrowthSQLite.int(db, "PRAGMA page_size")
            let free = try GrowthSQLite.int(db, "PRAGMA freelist_count")
            // The file's pages; the WAL is checkpointed back into them and reused.
            return (pages * size, free * size)
        }
    }

    func remove() async {
        guard !keep else { return }
        for suffix in ["", "-wal", "-shm", ".reserve"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

/// Raw SQLite on the queue's file, for the fill and the size.
enum GrowthSQLite {
    static func with<T>(_ path: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else { throw BenchError("open \(path)") }
        defer { sqlite3_close_v2(db) }
        return try body(db)
    }

    static func exec(_ db: OpaquePointer, _ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("\(sql.prefix(300)): \(String(cString: sqlite3_errmsg(db)))") }
    }

    static func strings(_ db: OpaquePointer, _ sql: String) throws -> [String] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))") }
        defer { sqlite3_finalize(statement) }
        var values: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW { values.append(String(cString: sqlite3_column_text(statement, 0))) }
        return values
    }

    static func int(_ db: OpaquePointer, _ sql: String) throws -> Int {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))") }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { return 0 }
        return Int(sqlite3_column_int64(statement, 0))
    }
}

// MARK: - PostgreSQL

struct PostgresGrowthStore: GrowthStore {
    let database: PostgresBench.Server
    let schema: String
    let keep: Bool
    let raw: PostgresClient
    let runner: Task<Void, Never>
    var label: String { "PostgreSQL" }

    init(database: PostgresBench.Server, schema: String, keep: Bool) {
        self.database = database
        self.schema = schema
        self.keep = keep
        let raw = database.rawClient(connections: 2)
        self.raw = raw
        runner = Task { await raw.run() }
    }

    func open(client: APIClient) async throws -> OfflineQueue {
        try await OfflineQueue.open(
            configuration: QueueConfiguration(path: database.queueURL(schema: schema), durability: .normal, concurrency: 16),
            client: client, logger: PostgresBench.quiet
        )
    }

    func fill(_ range: Range<Int>, template: EntryID, mix: GrowthMix) async throws {
        var columns: [String] = []
        for try await name in try await raw.query("""
            SELECT column_name::text FROM information_schema.columns WHERE table_schema = \(schema) AND table_name = 'entry' AND column_name <> 'id' ORDER BY ordinal_position
            """, logger: PostgresBench.quiet).decode(String.self) { columns.append(name) }
        for low in stride(from: range.lowerBound, to: range.upperBound, by: 100_000) {
            let high = min(range.upperBound, low + 100_000)
            let sql = mix.insert(
                table: "\"\(schema)\".entry", columns: columns, series: "generate_series(\(low)::bigint, \(high - 1)::bigint) AS s(i)",
                template: "(SELECT * FROM \"\(schema)\".entry WHERE id = \(template))", hex: "lpad(to_hex(i), 12, '0')"
            )
            try await raw.query(PostgresQuery(unsafeSQL: sql), logger: PostgresBench.quiet)
        }
        try await raw.query(PostgresQuery(unsafeSQL: "ANALYZE \"\(schema)\".entry"), logger: PostgresBench.quiet)
    }

    func size() async throws -> (bytes: Int, free: Int) {
        let rows = try await raw.query("""
            SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
            WHERE n.nspname = \(schema) AND c.relkind = 'r'
            """, logger: PostgresBench.quiet).decode(Int64.self)
        var bytes: Int64 = 0
        for try await value in rows { bytes = value }
        return (Int(bytes), 0)
    }

    func remove() async {
        if !keep { await PostgresBench.drop([schema], raw: raw) }
        runner.cancel()
    }
}
