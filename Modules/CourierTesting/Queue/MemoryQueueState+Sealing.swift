import Foundation
import OfflineQueueCore

/// The sealing role of the storage contract (``QueueSealStorage``) on the in-memory rows: the
/// queue's id, its key checks, and re-sealing entries in place.
extension MemoryQueueState {
    func readSealCatalog(countingEntries: Bool) -> SealCatalog {
        var catalog = SealCatalog(queueID: queueID, keyChecks: keyChecks)
        guard countingEntries else { return catalog }
        for row in rows.values { catalog.entries[row.entry.seal?.keyID, default: 0] += 1 }
        return catalog
    }

    mutating func writeKeyCheck(keyID: String, checkValue: String) -> String {
        if let recorded = keyChecks[keyID] { return recorded }
        keyChecks[keyID] = checkValue
        return checkValue
    }

    mutating func reseal(_ updates: [ResealUpdate]) -> Set<EntryID> {
        var applied: Set<EntryID> = []
        for update in updates {
            guard var row = rows[update.id], row.entry.state != .inflight, row.entry.seal?.keyID == update.expectedKeyID else { continue }
            row.entry.url = update.url
            row.entry.headers = update.headers
            row.entry.body = update.body
            row.entry.seal = update.seal
            rows[update.id] = row
            applied.insert(update.id)
        }
        return applied
    }
}
