import Foundation
import HTTPCore
import OfflineQueueCore

/// Edits that coalesce (``EnqueueOptions/coalescingKey``), as ``CoalescingRule`` decides: the
/// replacement in place of the entry waiting under a key.
extension MemoryQueueState {
    /// Entry `id` takes `new`'s request in place (its id, group position and children stay),
    /// with a fresh budget; its old request is kept under a new id as superseded, its last error
    /// `supersededReason`. Returns that id.
    mutating func replace(_ id: EntryID, with new: NewEntry, supersededReason: String, now: QueueTime) -> EntryID {
        guard let row = rows[id] else { return 0 }
        lastID += 1
        var record = row.entry
        record.id = lastID
        record.state = .superseded
        record.finishedAt = now.wall
        record.lastError = supersededReason
        record.coalescingKey = nil
        record.deadReason = nil
        rows[lastID] = Row(entry: record, due: row.due, attempted: row.attempted)
        byKey[record.idempotencyKey] = lastID
        let wait = max(0, (new.notBefore?.timeIntervalSince(now.wall) ?? 0))
        var entry = row.entry
        entry.idempotencyKey = new.idempotencyKey
        entry.method = new.method
        entry.url = new.url
        entry.headers = new.headers
        entry.body = new.body
        entry.scopes = new.scopes
        entry.name = new.name
        entry.group = new.group
        entry.priority = new.priority
        entry.timeout = new.timeout
        entry.attempts = 0
        entry.createdAt = now.wall
        entry.budgetStartedAt = now.wall
        entry.budgetUptime = now.uptime
        entry.nextAttemptAt = now.wall.addingTimeInterval(wait)
        entry.lastAttemptAt = nil
        entry.finishedAt = nil
        entry.waitingForNetwork = false
        entry.lastStatus = nil
        entry.lastError = nil
        entry.responseExcerpt = nil
        entry.deadReason = nil
        entry.seal = new.seal
        entry.traceContext = new.traceContext
        entry.keepResponse = new.keepResponse
        entry.delivery = new.delivery
        entry.responseSources = new.references.isEmpty ? [] : new.responseSources
        entry.bodyTakesValues = new.bodyTakesValues
        rows[id] = Row(entry: entry, due: now.uptime + wait)
        byKey[new.idempotencyKey] = id
        // Parents the new request names and the old did not wait for.
        let fresh = new.after.filter { !(links[id]?.parents.contains($0) ?? false) }
        if !fresh.isEmpty {
            links[id, default: ([], new.whenParentDies)].parents.append(contentsOf: fresh)
            for parent in fresh {
                // Each link keeps the policy of the request that made it, as the other stores keep it.
                if new.whenParentDies != links[id]?.policy { linkPolicies[id, default: [:]][parent] = new.whenParentDies }
                children[parent, default: []].insert(id)
                if rows[parent]?.entry.state == .delivered { deliveredParents.insert(parent) }
            }
            rows[id]?.entry.state = .blocked
            resolve([id], now: now)
        }
        return lastID
    }
}
