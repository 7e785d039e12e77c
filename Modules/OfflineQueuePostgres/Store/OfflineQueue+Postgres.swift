public import HTTPCore
public import Logging
@_exported public import OfflineQueueCore
public import PostgresNIO
public import Reachability

extension OfflineQueue {
    /// Opens the PostgreSQL queue at `QueueConfiguration.path`, a `postgres://` or
    /// `postgresql://` URL (see ``PostgresLocation``). A SQLite file is opened by
    /// `OfflineQueue(configuration:client:monitor:)` of the `OfflineQueue` module: this module
    /// compiles no SQLite, so a program that takes either store by its path links both modules
    /// and chooses with ``PostgresLocation/isPostgresURL(_:)``.
    ///
    /// ```swift
    /// let queue = try await OfflineQueue.open(
    ///     configuration: QueueConfiguration(path: "postgres://app@db.internal/app?schema=courier"),
    ///     client: client, monitor: try NetlinkMonitor()
    /// )
    /// defer { Task { await queue.close() } }
    /// ```
    ///
    /// A PostgreSQL queue creates (or migrates) its schema unless
    /// `QueueConfiguration.createIfMissing` is off; `QueueConfiguration.readOnly` never
    /// writes. `QueueConfiguration.durability` `.full` waits for the server's flush at every
    /// commit; `.normal` commits asynchronously (`synchronous_commit = off`): a crash of the
    /// database server may lose the last fraction of a second of commits. Call `close()` when
    /// done.
    ///
    /// - Throws: `QueueError.unavailable(location:reason:)` when the server cannot be
    ///   reached or refuses the login (nothing was changed), `QueueError.invalidRequest(_:)`
    ///   for a malformed URL, `QueueError.newerSchema(path:found:supported:)`,
    ///   `QueueError.databaseMissing(path:)`; `QueueError.invalidRequest(_:)` for a path
    ///   that is not a PostgreSQL URL (a file, which this module does not open).
    public static func open(
        configuration: QueueConfiguration, client: APIClient, monitor: (any NetworkMonitor)? = nil,
        logger: Logger = Logger(label: "courier.queue.postgres")
    ) async throws(QueueError) -> OfflineQueue {
        guard DatabaseLocation.isPostgresURL(configuration.path) else {
            throw .invalidRequest(
                "\(configuration.path) is not a postgres:// URL: a SQLite file opens with OfflineQueue(configuration:client:monitor:) from the OfflineQueue module"
            )
        }
        let place = try PostgresLocation(url: configuration.path)
        let store = try await PostgresQueueStore.open(
            place, create: configuration.createIfMissing, readOnly: configuration.readOnly,
            connections: max(4, configuration.concurrency / 2 + 2), durability: configuration.durability, logger: logger
        )
        return OfflineQueue(storage: store, location: store.location, configuration: configuration, client: client, monitor: monitor)
    }

    /// Stores `requests` inside the caller's own PostgreSQL transaction, open on `connection`:
    /// the transactional outbox. They commit with the caller's business writes, or roll back
    /// with them and leave nothing; the drainers are woken when the transaction commits.
    ///
    /// ```swift
    /// try await postgres.withTransaction(logger: logger) { connection in
    ///     try await connection.query("UPDATE orders SET state = 'paid' WHERE id = \(id)", logger: logger)
    ///     try await queue.enqueue([QueuedRequest(method: "POST", url: webhook, body: .data(payload))], on: connection)
    /// }
    /// ```
    ///
    /// The connection must be one of the same database as the queue, in an open transaction
    /// (`BEGIN` done, not yet committed). The tickets are valid once it commits. The requests
    /// are admitted as every enqueue's are (validated, their trace context kept, sealed when
    /// the queue seals, counted); large bodies are written in chunks on the same connection, so
    /// they roll back too. No `enqueued` event is published and no drainer of this process is
    /// woken here: the entries exist only if the caller commits, and the commit's `NOTIFY`
    /// wakes every drainer.
    ///
    /// - Throws: `QueueError.invalidRequest(_:)` for a request that cannot be stored or for a
    ///   queue that is not on PostgreSQL; `QueueError.Kind.keyUnavailable` when the queue must
    ///   seal and cannot; what the server refused as `QueueError.io(path:reason:)`.
    public func enqueue(_ requests: [QueuedRequest], on connection: PostgresConnection) async throws(QueueError) -> [Ticket] {
        guard let store = store as? PostgresQueueStore else {
            throw .invalidRequest("the transactional outbox needs a PostgreSQL queue; this one is \(location)")
        }
        return try await admit(requests, into: PostgresOutbox(store: store, connection: connection), announcing: false)
    }
}

/// The outbox's destination: the store's inserts and body chunks, written in the caller's
/// transaction on `connection`.
struct PostgresOutbox: QueueEnqueueStorage {
    let store: PostgresQueueStore
    let connection: PostgresConnection

    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket] {
        let fleet = try await store.fleetTime(now)
        do {
            return try await store.insert(entries, fleet: fleet, wall: now.wall, on: connection)
        } catch {
            throw PostgresErrors.map(error, location: store.location)
        }
    }

    func storeBody(_ stream: ByteStream) async throws(QueueError) -> StoredBody {
        let reference = RandomUUID.lowercased()
        do {
            let length = try await store.writeBody(stream, reference: reference, on: connection)
            return .file(name: reference, length: length)
        } catch {
            throw PostgresErrors.map(error, location: store.location)
        }
    }

    /// Chunks written in the caller's transaction go with it: a rollback removes them, and a
    /// commit keeps those no entry took (a deduplicated request's) until the orphan sweep.
    func discardBodies(_ bodies: [StoredBody]) async {}
}
