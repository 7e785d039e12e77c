import GRDB

extension Database {
    /// Runs `body` in a `BEGIN IMMEDIATE` … `COMMIT` transaction whose two statements are
    /// prepared once per connection and kept, rolled back when `body` or the commit throws.
    ///
    /// GRDB's `inTransaction` parses `BEGIN` and `COMMIT` at every call: each enqueue's and each
    /// drain commit's transaction would pay for two more prepares than its work needs.
    func inImmediateTransaction<T>(_ body: () throws -> T) throws -> T {
        try cachedStatement(sql: "BEGIN IMMEDIATE").execute()
        do {
            let value = try body()
            try cachedStatement(sql: "COMMIT").execute()
            return value
        } catch {
            // A failed COMMIT can leave the transaction open (SQLITE_BUSY); a failed statement
            // inside it leaves it open, or SQLite rolled it back already (a full disk).
            if isInsideTransaction { try? cachedStatement(sql: "ROLLBACK").execute() }
            throw error
        }
    }
}
