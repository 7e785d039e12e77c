import Foundation
import GRDBSQLite

/// A minimal raw SQLite insert: the 20 columns an enqueue writes, in a table with its rowid and
/// the one index an idempotency key needs (unique, as the enqueue's `ON CONFLICT … DO NOTHING`
/// relies on), WAL and `synchronous = FULL` (as the queue's `.full` durability), one transaction
/// per row.
public final class MinimalTable: @unchecked Sendable {
    // One caller at a time uses it, from one task: no two calls ever overlap.
    private let db: OpaquePointer
    private let statement: OpaquePointer
    private static let headerText = QueuePayload.headers.map { "\($0.name): \($0.value)\n" }.joined()

    public init(path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK, let db else { throw BenchError("sqlite3_open_v2 \(path)") }
        self.db = db
        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))") }
        }
        try exec("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = FULL")
        try exec("""
            CREATE TABLE entry (id INTEGER PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, method TEXT NOT NULL, url TEXT NOT NULL,
                headers TEXT NOT NULL, body BLOB, body_file TEXT, body_length INTEGER, scopes TEXT NOT NULL, name TEXT NOT NULL,
                group_key TEXT, priority INTEGER NOT NULL, timeout_ms INTEGER, state TEXT NOT NULL, attempts INTEGER NOT NULL,
                created_at REAL NOT NULL, budget_from REAL NOT NULL, next_attempt_at REAL NOT NULL, clock_boot TEXT,
                budget_uptime REAL NOT NULL, due_uptime REAL NOT NULL)
            """)
        var statement: OpaquePointer?
        let sql = """
            INSERT INTO entry (idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
                priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at, clock_boot, budget_uptime, due_uptime)
            VALUES (?, 'POST', ?, ?, ?, NULL, ?, '', 'POST /events', NULL, 0, NULL, 'pending', 0, ?, ?, ?, NULL, ?, ?)
            ON CONFLICT (idempotency_key) DO NOTHING
            """
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw BenchError("prepare: \(String(cString: sqlite3_errmsg(db)))") }
        self.statement = statement
    }

    deinit {
        sqlite3_finalize(statement)
        sqlite3_close_v2(db)
    }

    /// One row, committed on its own: a fresh key, the body of `index`, the clock's readings.
    public func insert(_ index: Int) throws {
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let key = UUID().uuidString.lowercased()
        let body = QueuePayload.body(index)
        let now = Date().timeIntervalSince1970
        let uptime = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        sqlite3_bind_text(statement, 1, key, -1, transient)
        sqlite3_bind_text(statement, 2, QueuePayload.url, -1, transient)
        sqlite3_bind_text(statement, 3, Self.headerText, -1, transient)
        _ = body.withUnsafeBytes { sqlite3_bind_blob(statement, 4, $0.baseAddress, Int32($0.count), transient) }
        sqlite3_bind_int64(statement, 5, Int64(body.count))
        sqlite3_bind_double(statement, 6, now)
        sqlite3_bind_double(statement, 7, now)
        sqlite3_bind_double(statement, 8, now)
        sqlite3_bind_double(statement, 9, uptime)
        sqlite3_bind_double(statement, 10, uptime)
        guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError("insert: \(String(cString: sqlite3_errmsg(db)))") }
        sqlite3_reset(statement)
    }
}
