import Foundation
import GRDB
import HTTPCore

/// Retention: delivered entries leave the file after their period, and the pages they held
/// go back to the file system.
extension SQLiteQueueStore {
    /// Rows deleted per transaction: small enough that an enqueue in another process waits
    /// for one batch at most, not for the whole pass, and that a drain's claims and
    /// settlements, which queue behind each batch, pause for well under 100 ms (500 left a
    /// drainer pauses of 150 to 250 ms at 1,000,000 and 10,000,000 entries; `courier-bench --growth`).
    static let retentionBatch = 100
    /// Pages released per transaction, for the same reason (2 MiB with SQLite's 4 KiB pages).
    static let vacuumBatch = 512

    /// Deletes delivered (and superseded) entries whose `finished_at` is before `cutoff`, a batch per
    /// transaction, and each batch's body files once its rows are gone (a crash in between
    /// leaves orphan files for ``BodyStore/sweepOrphans(keeping:grace:)``, never a row without
    /// its body). Dead and open entries are never touched.
    func deleteDeliveredEntries(finishedBefore cutoff: Date) async throws(QueueError) -> RetentionSummary {
        var summary = RetentionSummary()
        let batch = Self.retentionBatch
        let keepsParents = keepsParentsSQL
        // Each batch reads the oldest finished rows through `entry_finished` (schema 17) and
        // stops at the batch's size: its transaction costs the rows it deletes, whatever the
        // queue holds. (By `entry_state`, the states' two ranges were merged and sorted by id,
        // so every batch read every delivered row.)
        let order = schemaVersion >= Schema.firstRetentionIndexVersion
            ? "INDEXED BY entry_finished WHERE state IN ('delivered', 'superseded') AND finished_at < ?\(keepsParents) ORDER BY finished_at"
            : "INDEXED BY entry_state WHERE state IN ('delivered', 'superseded') AND state <> 'pending' AND finished_at < ?\(keepsParents) ORDER BY id"
        while true {
            let files = try await write { db -> [String?] in
                try String?.fetchAll(db, sql: """
                    DELETE FROM entry WHERE id IN (SELECT id FROM entry \(order) LIMIT ?)
                    RETURNING body_file
                    """, arguments: [cutoff.timeIntervalSince1970, batch])
            }
            let names = files.compactMap { $0 }
            bodies.remove(names)
            summary.deletedEntries += files.count
            summary.deletedBodyFiles += names.count
            if !files.isEmpty { ringSettled() }
            if files.count < batch { return summary }
        }
    }

    /// Keeps a delivered entry whose response a child not yet sent takes values from
    /// (``ResponseReference``): removing it would leave the child nothing to read. The child's
    /// sources (`1,2 body`) name it; a child that reads another parent only does not keep it.
    /// Only a file with those links (schema 13) has such children.
    private var keepsParentsSQL: String {
        guard schemaVersion >= Schema.firstResponseSourcesVersion else { return "" }
        return """

                            AND NOT EXISTS (SELECT 1 FROM entry_edge AS g JOIN entry AS c ON c.id = g.child
                                WHERE g.parent = entry.id AND c.state IN ('blocked', 'pending', 'inflight') AND c.response_sources IS NOT NULL
                                AND ',' || substr(c.response_sources, 1, instr(c.response_sources || ' ', ' ') - 1) || ',' LIKE '%,' || entry.id || ',%')
            """
    }

    /// Gives the free pages back to the file system, ``vacuumBatch`` at a time. Returns how
    /// many went. Does nothing on a file whose `auto_vacuum` is not INCREMENTAL.
    ///
    /// In WAL mode the file itself shrinks at the next checkpoint.
    func releasePages() async throws(QueueError) -> Int {
        var released = 0
        while true {
            let freed = try await write { db -> Int in
                let before = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
                guard before > 0 else { return 0 }
                try db.execute(sql: "PRAGMA incremental_vacuum(\(Self.vacuumBatch))")
                return before - (try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0)
            }
            released += freed
            // Nothing freed: the list is empty, or auto_vacuum is not INCREMENTAL.
            if freed < Self.vacuumBatch { return released }
        }
    }
}
