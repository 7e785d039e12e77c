import Foundation
import HTTPCore
import Logging
import OfflineQueueCore
import PostgresNIO

/// Kept responses and word of settlements (``QueueOutcomeStorage``).
extension PostgresQueueStore {
    func keptResponse(of id: EntryID) async throws(QueueError) -> StoredResponse? {
        try await reading { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT r.response, r.seal_key FROM §.entry_response AS r JOIN §.entry AS e ON e.id = r.entry
                WHERE r.entry = $1 AND e.state = 'delivered'
                """)).with(id), logger: self.logger).collect()
            guard let row = rows.first else { return nil }
            let (bytes, key) = try row.decode((Data, String?).self)
            return StoredResponse(bytes: bytes, keyID: key)
        }
    }

    /// Ids come from the entry table's identity, in order: an id no larger than its last value
    /// was given.
    func wasIssued(_ id: EntryID) async throws(QueueError) -> Bool {
        guard id > 0 else { return false }
        let table = "\(schema).entry"
        let last = try await reading { connection in
            try await connection.query(
                "SELECT pg_sequence_last_value(pg_get_serial_sequence(\(table), 'id')::regclass)", logger: self.logger
            ).collect().first?.decode(Int64?.self)
        }
        return id <= (last ?? 0)
    }

    /// One connection listening on `<schema>.settled` for all of this store's observers, from
    /// the first to the last. Once it listens it wakes them all: what settled while it
    /// connected is looked at again.
    func watchSettlements(_ wake: @escaping @Sendable () -> Void) -> SettlementWatch {
        let (observers, listener) = (settledObservers, settledListener)
        let (place, logger, channel) = (place, logger, PostgresSchema.settledChannel(place.schema))
        return observers.observe(wake, start: {
            listener.withLock { $0 = SettledListener(place: place, channel: channel, logger: logger, observers: observers) }
            return true
        }, stop: {
            listener.withLock { listener in
                listener?.stop()
                listener = nil
            }
        })
    }
}

/// A connection of its own that listens on the settled channel and tells the observers.
final class SettledListener: Sendable {
    private let task: Task<Void, Never>
    private let connection = LockedBox<PostgresConnection?>(nil)

    init(place: PostgresLocation, channel: String, logger: Logger, observers: SettlementObservers) {
        let held = connection
        task = Task {
            guard let connection = try? await PostgresQueueStore.connect(place, logger: logger) else { return }
            let stopped = held.withLock { held in
                held = connection
                return Task.isCancelled
            }
            if !stopped {
                do {
                    try await connection.listen(on: channel) { notifications in
                        observers.notify()
                        for try await _ in notifications { observers.notify() }
                    }
                } catch {
                    logger.debug("the settled listener's connection ended", metadata: ["error": "\(error)"])
                }
            }
            Self.close(connection)
        }
    }

    /// Stops listening and closes the connection.
    func stop() {
        task.cancel()
        if let connection = connection.withLock({ $0 }) { Self.close(connection) }
    }

    private static func close(_ connection: PostgresConnection) {
        // The connection must live until it is closed (PostgresNIO checks): the callback keeps it.
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }
}
