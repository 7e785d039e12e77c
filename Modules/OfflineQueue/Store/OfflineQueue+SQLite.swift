// The module a user reaches for first: the queue in a SQLite file, with the engine re-exported,
// so `import OfflineQueue` is all a SQLite queue needs (the engine is `OfflineQueueCore`; the
// PostgreSQL store is `OfflineQueuePostgres`; neither compiles GRDB nor the other's driver).
@_exported public import OfflineQueueCore
public import HTTPCore
public import Reachability

extension OfflineQueue {
    /// Opens the queue at `configuration.path`, creating it unless told not to, or for reading
    /// only when `QueueConfiguration.readOnly` is set.
    ///
    /// - Throws: `QueueError.corruptDatabase(path:reason:)` (damaged, or another
    ///   application's file), `QueueError.newerSchema(path:found:supported:)`,
    ///   `QueueError.cannotCreate(path:reason:)` (not writable, or an unsafe body folder),
    ///   `QueueError.databaseMissing(path:)`.
    ///   `QueueError.invalidRequest(_:)` for a `postgres://` or `postgresql://` path: a
    ///   PostgreSQL queue is opened by `OfflineQueue.open` of the `OfflineQueuePostgres` module.
    public convenience init(configuration: QueueConfiguration, client: APIClient, monitor: (any NetworkMonitor)? = nil) throws(QueueError) {
        if DatabaseLocation.isPostgresURL(configuration.path) {
            throw .invalidRequest(
                "\(DatabaseLocation.redacted(configuration.path)) is a PostgreSQL URL, not a file: open it with OfflineQueue.open(configuration:client:monitor:) from the OfflineQueuePostgres module"
            )
        }
        let store = try SQLiteQueueStore(
            path: configuration.path, create: configuration.createIfMissing, durability: configuration.durability,
            readOnly: configuration.readOnly, boot: configuration.clock.now().boot, inlineBodyLimit: configuration.inlineBodyLimit
        )
        self.init(storage: store, location: store.location, configuration: configuration, client: client, monitor: monitor)
    }
}
