import Foundation
import GRDB
import HTTPCore

/// Kept responses and word of settlements (``QueueOutcomeStorage``).
extension SQLiteQueueStore {
    func keptResponse(of id: EntryID) async throws(QueueError) -> StoredResponse? {
        guard schemaVersion >= Schema.firstKeptResponseVersion else { return nil }
        return try await read { db in
            try Row.fetchOne(db, sql: "SELECT response, seal_key FROM entry_response WHERE entry = ?", arguments: [id]).map { row in
                StoredResponse(bytes: row[0], keyID: row[1])
            }
        }
    }

    /// Ids are given in order from one more than the largest there is or was (`id_floor` keeps
    /// the largest removed).
    func wasIssued(_ id: EntryID) async throws(QueueError) -> Bool {
        guard id > 0 else { return false }
        let floor = schemaVersion >= Schema.firstLeanInsertVersion ? "(SELECT id_floor FROM queue_meta)" : "0"
        let largest = try await read { db in
            try EntryID.fetchOne(db, sql: "SELECT max((SELECT COALESCE(max(id), 0) FROM entry), \(floor))") ?? 0
        }
        return id <= largest
    }

    /// One inotify watch of `<db>.settled` for all of this store's observers.
    func watchSettlements(_ wake: @escaping @Sendable () -> Void) -> SettlementWatch {
        let (file, observers) = (settledFile, settledObservers)
        return observers.observe(wake, start: {
            file.watch { observers.notify() }
            return file.isWatching
        }, stop: { file.stop() })
    }

    /// Tells every process awaiting an outcome that entries were delivered, died or went,
    /// after the commit that did it. Costs one `utimensat` that fails when no one ever watched.
    func ringSettled() {
        if !readOnly { settledFile.ring() }
    }

    /// Keeps the responses of `settlements` that were recorded as deliveries (`delivered`), in
    /// the caller's transaction.
    static func keepResponses(_ db: Database, _ settlements: [Settlement], delivered: Set<EntryID>) throws {
        for settlement in settlements {
            guard let kept = settlement.kept, delivered.contains(settlement.id) else { continue }
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO entry_response (entry, seal_key, response) VALUES (?, ?, ?)")
                .execute(arguments: [settlement.id, kept.keyID, kept.bytes])
        }
    }
}
