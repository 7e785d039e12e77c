/// What one retention pass removed.
public struct RetentionSummary: Sendable, Hashable, Codable {
    /// Delivered entries deleted.
    public var deletedEntries = 0
    /// Bodies kept apart deleted with them (files on SQLite, chunked bodies on PostgreSQL).
    public var deletedBodyFiles = 0
    /// Database pages given back to the file system (SQLite's `PRAGMA incremental_vacuum`; 0
    /// on the other stores).
    public var releasedPages = 0

    /// A summary with the counts given; every count zero by default.
    public init(deletedEntries: Int = 0, deletedBodyFiles: Int = 0, releasedPages: Int = 0) {
        self.deletedEntries = deletedEntries
        self.deletedBodyFiles = deletedBodyFiles
        self.releasedPages = releasedPages
    }
}
