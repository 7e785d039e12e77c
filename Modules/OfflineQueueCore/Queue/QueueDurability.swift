/// How hard a commit works to survive a crash. See `Docs/OfflineQueue.md`.
public enum QueueDurability: String, Sendable, Hashable {
    /// Every commit reaches the disk before the call returns (SQLite's `synchronous=FULL`; on
    /// PostgreSQL, the server's flush); an enqueued request survives a power cut. The default.
    case full
    /// Commits survive a crash or `kill -9` of the process, but the last ones may be lost if the
    /// machine (or the database server) loses power: SQLite's `synchronous=NORMAL`, PostgreSQL's
    /// `synchronous_commit = off`. An enqueue waits for no flush.
    case normal
}
