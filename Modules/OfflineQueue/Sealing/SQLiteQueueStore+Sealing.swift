import Foundation
import GRDB
import HTTPCore

/// The sealing role (``QueueSealStorage``) on SQLite: `queue_meta.queue_uuid`, the `queue_key`
/// table, and the entries' `seal_key` and `seal` columns (schema 9).
extension SQLiteQueueStore {
    func readSealCatalog(countingEntries: Bool) async throws(QueueError) -> SealCatalog {
        let version = schemaVersion
        return try await read { db in
            guard version >= Schema.firstSealVersion else {
                // An older file read as it is: nothing in it is sealed.
                guard countingEntries else { return SealCatalog(queueID: UUID(uuid: UUID.zero)) }
                let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM entry") ?? 0
                return SealCatalog(queueID: UUID(uuid: UUID.zero), entries: count > 0 ? [nil: count] : [:])
            }
            let bytes = try Data.fetchOne(db, sql: "SELECT queue_uuid FROM queue_meta") ?? Data()
            guard bytes.count == 16 else { throw QueueError.corruptDatabase(path: self.path, reason: "queue_meta has no queue id of 16 bytes") }
            var catalog = SealCatalog(queueID: UUID(bytes: bytes))
            for row in try Row.fetchAll(db, sql: "SELECT key_id, check_value FROM queue_key") {
                catalog.keyChecks[row[0]] = row[1]
            }
            guard countingEntries else { return catalog }
            for row in try Row.fetchAll(db, sql: "SELECT seal_key, count(*) FROM entry GROUP BY seal_key") {
                catalog.entries[row[0] as String?] = row[1]
            }
            return catalog
        }
    }

    func writeKeyCheck(keyID: String, checkValue: String) async throws(QueueError) -> String {
        try await write { db in
            try db.execute(sql: "INSERT INTO queue_key (key_id, check_value) VALUES (?, ?) ON CONFLICT DO NOTHING", arguments: [keyID, checkValue])
            return try String.fetchOne(db, sql: "SELECT check_value FROM queue_key WHERE key_id = ?", arguments: [keyID]) ?? checkValue
        }
    }

    func reseal(_ updates: [ResealUpdate]) async throws(QueueError) -> Set<EntryID> {
        guard !updates.isEmpty else { return [] }
        return try await write { db in
            let update = try db.cachedStatement(sql: """
                UPDATE entry SET url = ?, headers = ?, body = ?, body_file = ?, body_length = ?, seal_key = ?, seal = ?
                WHERE id = ? AND seal_key IS ? AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)
                """)
            var applied: Set<EntryID> = []
            for change in updates {
                let (inline, file) = change.body.columns
                try update.execute(arguments: [
                    change.url, LineCoding.encode(change.headers), inline, file, change.body?.length,
                    change.seal?.keyID, change.seal?.blob, change.id, change.expectedKeyID,
                ])
                if db.changesCount == 1 { applied.insert(change.id) }
            }
            return applied
        }
    }
}
