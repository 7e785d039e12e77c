import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// The sealing role (``QueueSealStorage``) on PostgreSQL: `queue_meta.queue_uuid`, the
/// `queue_key` table, and the entries' `seal_key` and `seal` columns (migration `v3-sealing`).
extension PostgresQueueStore {
    func readSealCatalog(countingEntries: Bool) async throws(QueueError) -> SealCatalog {
        let location = self.location
        return try await reading { connection in
            let bytes = try await connection.query(
                PostgresQuery(unsafeSQL: self.sql("SELECT queue_uuid FROM §.queue_meta")), logger: self.logger
            ).decodeAll(Data.self).first ?? Data()
            guard bytes.count == 16 else { throw QueueError.corruptDatabase(path: location, reason: "queue_meta has no queue id of 16 bytes") }
            var catalog = SealCatalog(queueID: UUID(bytes: bytes))
            for try await (key, check) in try await connection.query(
                PostgresQuery(unsafeSQL: self.sql("SELECT key_id, check_value FROM §.queue_key")), logger: self.logger
            ).decode((String, String).self) {
                catalog.keyChecks[key] = check
            }
            guard countingEntries else { return catalog }
            for try await (key, count) in try await connection.query(
                PostgresQuery(unsafeSQL: self.sql("SELECT seal_key, count(*) FROM §.entry GROUP BY seal_key")), logger: self.logger
            ).decode((String?, Int64).self) {
                catalog.entries[key] = Int(count)
            }
            return catalog
        }
    }

    func writeKeyCheck(keyID: String, checkValue: String) async throws(QueueError) -> String {
        try await transaction { connection in
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                INSERT INTO §.queue_key (key_id, check_value) VALUES ($1, $2) ON CONFLICT DO NOTHING
                """)).with(keyID, checkValue), logger: self.logger)
            // A statement of its own: it sees the row of a concurrent insert that won.
            return try await connection.query(PostgresQuery(unsafeSQL: self.sql("SELECT check_value FROM §.queue_key WHERE key_id = $1"))
                .with(keyID), logger: self.logger).decodeAll(String.self).first ?? checkValue
        }
    }

    func reseal(_ updates: [ResealUpdate]) async throws(QueueError) -> Set<EntryID> {
        guard !updates.isEmpty else { return [] }
        let statement = sql("""
            UPDATE §.entry SET url = $1, headers = $2, body = $3, body_ref = $4, body_length = $5, seal_key = $6, seal = $7
            WHERE id = $8 AND seal_key IS NOT DISTINCT FROM $9 AND state <> 'inflight'
            RETURNING id
            """)
        return try await transaction { connection in
            var applied: Set<EntryID> = []
            for change in updates {
                let (inline, reference) = change.body.columns
                let updated = try await connection.query(try PostgresQuery(unsafeSQL: statement).with(
                    change.url, LineCoding.encode(change.headers), inline, reference, change.body.map { Int64($0.length) },
                    change.seal?.keyID, change.seal?.blob, change.id, change.expectedKeyID
                ), logger: self.logger).decodeAll(Int64.self)
                if !updated.isEmpty { applied.insert(change.id) }
            }
            return applied
        }
    }
}
