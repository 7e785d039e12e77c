import Foundation
import HTTPCore
import OfflineQueueCore

/// The rows of a ``MemoryQueueStore`` and the rules the storage contract sets for them, as
/// plain mutations of a value: the store holds it behind a lock and calls one of these per
/// call, so each call is one transaction.
///
/// Time rules compare boot-clock readings (``QueueTime/uptime``) directly: the rows live within
/// one process, so within one boot. Wall-clock fields are written for people, as the other
/// stores write them.
struct MemoryQueueState {
    /// One stored entry and what only the store sees of it.
    struct Row {
        var entry: QueueEntry
        /// When the entry is due, on the boot clock (meaningful while pending).
        var due: Double
        /// When its last attempt started, on the boot clock.
        var attempted: Double?
        /// When its lease lapses, on the boot clock (while in flight).
        var leaseUntil: Double?
    }

    var rows: [EntryID: Row] = [:]
    var byKey: [String: EntryID] = [:]
    var lastID: EntryID = 0
    /// Bodies kept apart, by name, with when they were stored (for the orphan sweep's grace).
    var bodies: [String: (data: Data, stored: Date)] = [:]
    var pauses: [String?: Date] = [:]
    /// Flow rows by origin (``FlowControl``): only origins paused, shrunk or limited.
    var flows: [String: OriginFlow] = [:]
    /// The activity kept per minute (the console's chart), by minute number.
    var activity: [Int64: ActivityMinute] = [:]
    /// The drainers whose hold lives: a hold dies when its session shuts down or goes away.
    var liveOwners: Set<String> = []
    /// The queue's id and the key-check values recorded per key id (``QueueSealStorage``).
    let queueID = UUID()
    var keyChecks: [String: String] = [:]
    /// What each entry that waits for others waits for, and under which policy.
    var links: [EntryID: (parents: [EntryID], policy: ParentDeathPolicy)] = [:]
    /// The entries that wait for each entry.
    var children: [EntryID: Set<EntryID>] = [:]
    /// Links whose policy is not their child's: a newer edit behind one in flight under its
    /// coalescing key proceeds once that one is settled.
    var linkPolicies: [EntryID: [EntryID: ParentDeathPolicy]] = [:]
    /// The entries delivered that others waited for: delivered still once retention removed them.
    var deliveredParents: Set<EntryID> = []
    /// The responses delivered entries kept, by entry.
    var responses: [EntryID: StoredResponse] = [:]

    // MARK: - Enqueue

    /// Refuses the whole call, storing nothing, when an entry waits for one the queue lacks, or
    /// would wait for itself. Entries are taken in order, as the other stores insert them in
    /// their transaction: a later entry of the call may wait for an earlier one.
    mutating func insert(_ entries: [NewEntry], now: QueueTime) throws(QueueError) -> [Ticket] {
        var state = self
        var tickets: [Ticket] = []
        for new in entries { tickets.append(try state.insert(new, now: now)) }
        self = state
        return tickets
    }

    /// Parents `new` waits for, checked as the other stores check them when they link it as
    /// `child`: each stored, none closing a loop, each read keeping what is read of it.
    private func checkParents(of new: NewEntry, child: EntryID, after: [EntryID]) throws(QueueError) {
        if let loop = DependencyRule.loop(child: child, parents: after, below: links(below: child)) { throw .dependencyCycle(loop) }
        if let missing = after.first(where: { rows[$0] == nil && $0 != child }) { throw .noSuchDependency(missing) }
        try checkReferences(of: new)
    }

    /// Each parent `new`'s references read keeps what is read of it.
    private func checkReferences(of new: NewEntry) throws(QueueError) {
        guard !new.references.isEmpty else { return }
        var keeping: [EntryID: ResponseKeeping] = [:]
        for parent in new.responseSources { keeping[parent] = rows[parent]?.entry.keepResponse }
        try ResponseReference.check(new.references, keeping: keeping)
    }

    private mutating func insert(_ new: NewEntry, now: QueueTime) throws(QueueError) -> Ticket {
        if let id = byKey[new.idempotencyKey] { return Ticket(id: id, idempotencyKey: new.idempotencyKey, deduplicated: true) }
        // An edit that coalesces takes the place of the one waiting under its key, or
        // waits behind the one in flight.
        var behind: EntryID?
        if let key = new.coalescingKey {
            let holders = rows.values.filter { $0.entry.coalescingKey == key && [.pending, .blocked, .inflight].contains($0.entry.state) }
                .map { CoalescingRule.Holder(id: $0.entry.id, inFlight: $0.entry.state == .inflight) }
            switch CoalescingRule.decide(holders) {
            case .insert: break
            case .after(let predecessor): behind = predecessor
            case .replace(let id):
                let fresh = new.after.filter { !(links[id]?.parents.contains($0) ?? false) }
                try checkReferences(of: new)
                if !fresh.isEmpty { try checkParents(of: new, child: id, after: fresh) }
                let superseded = replace(id, with: new, supersededReason: CoalescingRule.supersededReason(by: id, key: key), now: now)
                return Ticket(id: id, idempotencyKey: new.idempotencyKey, deduplicated: false, superseded: superseded)
            }
        }
        if !new.after.isEmpty { try checkParents(of: new, child: lastID + 1, after: new.after) }
        lastID += 1
        let wait = max(0, (new.notBefore?.timeIntervalSince(now.wall) ?? 0))
        let entry = QueueEntry(
            id: lastID, idempotencyKey: new.idempotencyKey, method: new.method, url: new.url, headers: new.headers,
            body: new.body, scopes: new.scopes, name: new.name, group: new.group, priority: new.priority, timeout: new.timeout,
            state: .pending, attempts: 0, createdAt: now.wall, budgetStartedAt: now.wall,
            nextAttemptAt: now.wall.addingTimeInterval(wait), lastAttemptAt: nil, finishedAt: nil, waitingForNetwork: false,
            leaseOwner: nil, leaseExpiresAt: nil, lastStatus: nil, lastError: nil, responseExcerpt: nil,
            budgetUptime: now.uptime
        )
        var stored = entry
        stored.seal = new.seal
        stored.traceContext = new.traceContext
        stored.keepResponse = new.keepResponse
        stored.responseSources = new.references.isEmpty ? [] : new.responseSources
        stored.bodyTakesValues = new.bodyTakesValues
        stored.coalescingKey = new.coalescingKey
        stored.delivery = new.delivery
        rows[lastID] = Row(entry: stored, due: now.uptime + wait)
        byKey[new.idempotencyKey] = lastID
        if !new.after.isEmpty {
            links[lastID] = (new.after, new.whenParentDies)
            for parent in new.after {
                children[parent, default: []].insert(lastID)
                if rows[parent]?.entry.state == .delivered { deliveredParents.insert(parent) }
            }
            rows[lastID]?.entry.state = .blocked
            resolve([lastID], now: now)
        }
        if let behind {
            let id = lastID
            // A link the entry names itself keeps its own policy, as the other stores keep it.
            if !(links[id]?.parents.contains(behind) ?? false) {
                links[id, default: ([], new.whenParentDies)].parents.append(behind)
                linkPolicies[id, default: [:]][behind] = .proceed
            }
            children[behind, default: []].insert(id)
            rows[id]?.entry.state = .blocked
            resolve([id], now: now)
        }
        return Ticket(id: lastID, idempotencyKey: new.idempotencyKey, deduplicated: false)
    }

    /// The links under `id`: each link whose parent is `id` or waits for it, at any depth.
    func links(below id: EntryID) -> [DependencyRule.Link] {
        var found: [DependencyRule.Link] = []
        var seen: Set<EntryID> = [id]
        var next = [id]
        while let parent = next.popLast() {
            for child in children[parent] ?? [] {
                found.append(DependencyRule.Link(child: child, parent: parent))
                if seen.insert(child).inserted { next.append(child) }
            }
        }
        return found
    }

    // MARK: - The drain

    /// Records `settlements` of `owner`'s claims; returns the ids whose claim `owner` no longer
    /// holds (nothing changed for those).
    mutating func settle(_ settlements: [Settlement], owner: String, now: QueueTime) -> Set<EntryID> {
        var lost: Set<EntryID> = []
        var finished: [EntryID] = []
        defer { resolveChildren(of: finished, now: now) }
        for settlement in settlements {
            guard var row = rows[settlement.id], row.entry.state == .inflight, row.entry.leaseOwner == owner else {
                lost.insert(settlement.id)
                continue
            }
            var entry = row.entry
            switch settlement.transition {
            case .deliver(let status):
                finished.append(settlement.id)
                if children[settlement.id] != nil { deliveredParents.insert(settlement.id) }
                entry.state = .delivered
                entry.attempts += 1
                entry.finishedAt = now.wall
                entry.lastStatus = status
                entry.lastError = nil
                entry.waitingForNetwork = false
                if let kept = settlement.kept { responses[settlement.id] = kept }
            case .retry(let retry):
                entry.state = .pending
                entry.attempts += retry.consumesAttempt ? 1 : 0
                entry.nextAttemptAt = now.wall.addingTimeInterval(retry.after.seconds)
                row.due = now.uptime + retry.after.seconds
                entry.waitingForNetwork = retry.waitingForNetwork
                entry.lastStatus = retry.status
                entry.lastError = retry.error
                entry.responseExcerpt = retry.excerpt
            case .deadLetter(let dead):
                finished.append(settlement.id)
                entry.state = .dead
                entry.attempts += dead.consumesAttempt ? 1 : 0
                entry.finishedAt = now.wall
                entry.lastStatus = dead.status
                entry.deadReason = dead.reason
                entry.lastError = dead.error
                entry.responseExcerpt = dead.excerpt
                entry.waitingForNetwork = false
            case .release:
                entry.state = .pending
            case .conflict(let conflict), .drop(let conflict):
                let dropped = if case .drop = settlement.transition { true } else { false }
                if dropped { finished.append(settlement.id) }
                entry.record(conflict, dropped: dropped, now: now)
            }
            entry.leaseOwner = nil
            entry.leaseExpiresAt = nil
            row.leaseUntil = nil
            row.entry = entry
            rows[settlement.id] = row
            if let new = settlement.replacement { _ = replace(settlement.id, with: new.entry, supersededReason: new.reason, now: now) }
        }
        return lost
    }

    /// Entries in flight under drainers that are gone go back to pending, nothing counted.
    mutating func reclaimOrphans(owner: String) -> Int {
        var reclaimed = 0
        for (id, row) in rows where row.entry.state == .inflight {
            guard let holder = row.entry.leaseOwner, holder != owner, !liveOwners.contains(holder) else { continue }
            rows[id]?.entry.lastError = "taken back from \(holder), a drainer that is gone"
            unlease(id)
            reclaimed += 1
        }
        return reclaimed
    }

    /// The lapsed leases of other drainers (the guard against one that lives but hangs) go
    /// back to pending.
    mutating func returnLapsedLeases(owner: String, now: QueueTime) {
        for (id, row) in rows where row.entry.state == .inflight && row.entry.leaseOwner != owner {
            if let until = row.leaseUntil, until < now.uptime { unlease(id) }
        }
    }

    /// Claims up to `limit` due entries for `owner`: the highest priority first, then the
    /// oldest, only the first open entry of each group, none a pause holds, none attempted at or
    /// after `attemptedSince`.
    mutating func claim(
        limit: Int, owner: String, now: QueueTime, lease: Duration, attemptedSince: Double?, result: inout ClaimResult
    ) -> [QueueEntry] {
        guard limit > 0 else { return [] }
        let queuePaused = pauses.keys.contains(nil)
        // The first open entry of each group: a later one waits, whatever holds the first.
        var heads: [String: EntryID] = [:]
        // A group with an entry in flight sends nothing else until it is settled, even an
        // older entry an operator retried meanwhile: one at a time, in order.
        var sending: Set<String> = []
        for (id, row) in rows where [.pending, .inflight, .blocked, .conflict].contains(row.entry.state) {
            guard let group = row.entry.group else { continue }
            if id < heads[group, default: .max] { heads[group] = id }
            if row.entry.state == .inflight { sending.insert(group) }
        }
        let candidates = rows.values.filter { row in
            let entry = row.entry
            guard entry.state == .pending, row.due <= now.uptime, !queuePaused else { return false }
            if let since = attemptedSince, let attempted = row.attempted, attempted >= since { return false }
            if let group = entry.group, heads[group] != entry.id || sending.contains(group) || pauses.keys.contains(group) { return false }
            return true
        }
        .sorted { $0.entry.priority != $1.entry.priority ? $0.entry.priority > $1.entry.priority : $0.entry.id < $1.entry.id }
        let chosen = admitted(candidates, limit: limit, now: now, result: &result)
        return chosen.map { candidate in
            var row = candidate
            row.entry.state = .inflight
            row.entry.leaseOwner = owner
            row.entry.leaseExpiresAt = now.wall.addingTimeInterval(lease.seconds)
            row.entry.lastAttemptAt = now.wall
            row.attempted = now.uptime
            row.leaseUntil = now.uptime + lease.seconds
            rows[row.entry.id] = row
            return row.entry
        }
    }

    /// Back to pending, as it was before the claim but for what the claim recorded.
    private mutating func unlease(_ id: EntryID) {
        rows[id]?.entry.state = .pending
        rows[id]?.entry.leaseOwner = nil
        rows[id]?.entry.leaseExpiresAt = nil
        rows[id]?.leaseUntil = nil
    }

    mutating func extendLeases(_ ids: [EntryID], owner: String, now: QueueTime, lease: Duration) {
        for id in ids {
            guard let row = rows[id], row.entry.state == .inflight, row.entry.leaseOwner == owner else { continue }
            rows[id]?.leaseUntil = now.uptime + lease.seconds
            rows[id]?.entry.leaseExpiresAt = now.wall.addingTimeInterval(lease.seconds)
        }
    }

    mutating func wakeWaiters(now: QueueTime) -> Int {
        var woken = 0
        for (id, row) in rows where row.entry.state == .pending && row.entry.waitingForNetwork {
            rows[id]?.entry.waitingForNetwork = false
            rows[id]?.entry.nextAttemptAt = now.wall
            rows[id]?.due = now.uptime
            woken += 1
        }
        return woken
    }

    // MARK: - Operators

    /// Due now with a fresh budget.
    private mutating func restart(_ id: EntryID, now: QueueTime) {
        guard var row = rows[id] else { return }
        row.entry.state = .pending
        row.entry.attempts = 0
        row.entry.budgetStartedAt = now.wall
        row.entry.budgetUptime = now.uptime
        row.entry.nextAttemptAt = now.wall
        row.entry.waitingForNetwork = false
        row.entry.finishedAt = nil
        row.entry.deadReason = nil
        row.due = now.uptime
        rows[id] = row
        // An entry that waits for others is blocked again until they are delivered.
        if links[id] != nil {
            rows[id]?.entry.state = .blocked
            resolve([id], now: now)
        }
    }

    /// Deletes the rows of `ids`; returns the names of their bodies kept apart. The blocked
    /// children of an entry deleted unsent are decided at `now` (retention deletes delivered
    /// entries only, whose children were released at their delivery: it passes `nil`).
    private mutating func delete(_ ids: [EntryID], now: QueueTime?) -> [String] {
        var names: [String] = []
        defer { if let now { resolveChildren(of: ids, now: now) } }
        for id in ids {
            guard let row = rows.removeValue(forKey: id) else { continue }
            responses[id] = nil
            if let link = links.removeValue(forKey: id) {
                for parent in link.parents { children[parent]?.remove(id) }
            }
            byKey[row.entry.idempotencyKey] = nil
            if case .file(let name, _) = row.entry.body {
                names.append(name)
                bodies[name] = nil
            }
        }
        return names
    }

    /// Whether `row` is in flight under a drainer that lives.
    func held(_ row: Row) -> Bool {
        row.entry.state == .inflight && row.entry.leaseOwner.map(liveOwners.contains) == true
    }

    /// The rows `selection` matches among `states`, oldest first.
    func matching(_ selection: EntrySelection, states: Set<EntryState>, now: QueueTime) -> [Row] {
        let conditions = selection.conditions
        return rows.values.filter { row in
            states.contains(row.entry.state) && conditions.allSatisfy { $0.holds(for: row.entry, now: now.wall) }
        }
        .sorted { $0.entry.id < $1.entry.id }
        .prefix(selection.limit.map { max(0, $0) } ?? .max)
        .map { $0 }
    }

    /// `operation` on the rows `selection` matches; which of them change is the operation's rule.
    mutating func change(_ operation: BulkOperation, matching selection: EntrySelection, now: QueueTime, dryRun: Bool) -> BulkChange {
        let found = matching(selection, states: operation.states(of: selection), now: now)
        let (changed, skipped) = operation.plan(found.map { row in
            BulkMatch(id: row.entry.id, state: row.entry.state, drainerLives: held(row), bodyReference: nil)
        })
        var change = BulkChange(ids: changed.map(\.id), skipped: skipped, dryRun: dryRun)
        if dryRun {
            change.entries = change.ids.compactMap { id in rows[id].map { entry($0, now: now) } }
        } else {
            switch operation {
            case .retry: for id in change.ids { restart(id, now: now) }
            case .purge: _ = delete(change.ids, now: now)
            case .release: release(change.ids, now: now)
            }
        }
        return change
    }

    // MARK: - Upkeep

    mutating func deleteDeliveredEntries(finishedBefore cutoff: Date) -> RetentionSummary {
        // A parent whose response a child not yet sent, and linked to it, takes values from
        // stays (one an operator released, its links dropped, keeps none: as the other stores
        // find them, by the links).
        let open: Set<EntryState> = [.blocked, .pending, .inflight]
        let needed = Set(rows.values.filter { open.contains($0.entry.state) }.flatMap { row in
            row.entry.responseSources.filter { links[row.entry.id]?.parents.contains($0) == true }
        })
        let ids = rows.values.filter {
            [.delivered, .superseded].contains($0.entry.state) && ($0.entry.finishedAt ?? .distantFuture) < cutoff
                && !needed.contains($0.entry.id)
        }.map(\.entry.id)
        let names = delete(ids, now: nil)
        return RetentionSummary(deletedEntries: ids.count, deletedBodyFiles: names.count)
    }

    /// Bodies no entry references, stored before `cutoff`, go.
    mutating func sweepOrphanBodies(storedBefore cutoff: Date) {
        var referenced: Set<String> = []
        for row in rows.values { if case .file(let name, _) = row.entry.body { referenced.insert(name) } }
        bodies = bodies.filter { referenced.contains($0.key) || $0.value.stored >= cutoff }
    }
}
