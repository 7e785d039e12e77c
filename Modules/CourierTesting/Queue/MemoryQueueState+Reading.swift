import Foundation
import HTTPCore
import OfflineQueueCore

/// Reading a ``MemoryQueueState``: entries as readers see them, pages, counts, pauses, and what
/// is wrong with its rows.
extension MemoryQueueState {
    /// `row`'s entry as a reader sees it: a pending one with its due time on the boot clock.
    func entry(_ row: Row, now: QueueTime) -> QueueEntry {
        var entry = row.entry
        if entry.state == .pending { entry.nextDue = DueTime(boot: now.boot, uptime: row.due) }
        return entry
    }

    func entries(_ filter: EntryQuery, now: QueueTime) -> [QueueEntry] {
        rows.values
            .filter { row in
                (filter.states.isEmpty || filter.states.contains(row.entry.state))
                    && Self.matches(filter, row.entry, now: now.wall) && (filter.after.map { row.entry.id > $0 } ?? true)
            }
            .sorted { $0.entry.id < $1.entry.id }
            .prefix(max(0, filter.limit))
            .map { entry($0, now: now) }
    }

    /// Whether `entry` has the filter's group, name and origin.
    static func matches(_ filter: EntryQuery, _ entry: QueueEntry, now: Date) -> Bool {
        filter.conditions.allSatisfy { $0.holds(for: entry, now: now) }
    }

    /// The entries of `filter` among the first `scanLimit` rows of its states past its cursor.
    func entryPage(_ filter: EntryQuery, scanLimit: Int, now: QueueTime) -> EntryPage {
        let window = rows.values
            .filter { row in (filter.states.isEmpty || filter.states.contains(row.entry.state)) && (filter.after.map { row.entry.id > $0 } ?? true) }
            .sorted { $0.entry.id < $1.entry.id }
        let scan = max(scanLimit, filter.limit, 1)
        let examined = window.prefix(scan)
        let found = Array(examined.filter { Self.matches(filter, $0.entry, now: now.wall) }.prefix(max(0, filter.limit)))
        if filter.limit > 0, found.count == filter.limit, let last = found.last {
            return EntryPage(entries: found.map { entry($0, now: now) }, next: window.last!.entry.id > last.entry.id ? last.entry.id : nil)
        }
        return EntryPage(entries: found.map { entry($0, now: now) }, next: window.count > scan ? examined.last?.entry.id : nil)
    }

    /// By group, name and state among the newest; the network waiters; recent deliveries.
    func tally(newest: Int, now: QueueTime) -> EntryTally {
        var tally = EntryTally()
        for row in rows.values.sorted(by: { $0.entry.id > $1.entry.id }).prefix(max(0, newest)) {
            tally.counts[EntryTally.Key(group: row.entry.group, name: row.entry.name, state: row.entry.state), default: 0] += 1
            tally.examined += 1
        }
        tally.waitingForNetwork = rows.values.filter { $0.entry.state == .pending && $0.entry.waitingForNetwork }.count
        let delivered = rows.values.filter { $0.entry.state == .delivered }.sorted { $0.entry.id > $1.entry.id }
            .prefix(EntryTally.deliveryWindow).compactMap(\.entry.finishedAt)
        tally.deliveredLastMinute = delivered.filter { $0 >= now.wall.addingTimeInterval(-60) }.count
        tally.deliveredLastFiveMinutes = delivered.filter { $0 >= now.wall.addingTimeInterval(-300) }.count
        return tally
    }

    /// Whether a pause holds back an entry of `group`.
    func paused(_ group: String?) -> Bool {
        pauses.keys.contains(nil) || group.map { pauses.keys.contains($0) } == true
    }

    func counts(now: QueueTime, owner: String) -> QueueCounts {
        var counts = QueueCounts()
        let held = flowBook(now: now).map { Set($0.heldOrigins) }
        var oldest: Row?
        var next: Double?
        var drainers: [String: Int] = [:]
        for row in rows.values {
            switch row.entry.state {
            case .pending:
                counts.pending += 1
                if row.entry.id < oldest?.entry.id ?? .max { oldest = row }
                guard !paused(row.entry.group) else { continue }
                next = min(next ?? row.due, row.due)
                guard row.due <= now.uptime else { continue }
                // Held back by its origin's flow (FlowControl): counted apart, not due.
                if let held, let origin = FlowOrigin.key(ofURL: row.entry.url), held.contains(String(origin)) {
                    counts.heldByFlow += 1
                } else {
                    counts.due += 1
                }
            case .inflight:
                counts.inflight += 1
                if let holder = row.entry.leaseOwner, liveOwners.contains(holder) {
                    drainers[holder, default: 0] += 1
                } else {
                    counts.inflightOrphaned += 1
                }
            case .delivered: counts.delivered += 1
            case .dead: counts.dead += 1
            case .blocked: counts.blocked += 1
            case .superseded: counts.superseded += 1
            case .conflict: counts.conflict += 1
            }
        }
        counts.oldestPendingCreatedAt = oldest?.entry.createdAt
        if let next {
            counts.nextDue = DueTime(boot: now.boot, uptime: next)
            counts.nextAttemptAt = now.wallTime(atUptime: next)
        }
        counts.drainers = drainers.keys.sorted()
        counts.inflightHere = drainers[owner] ?? 0
        // The newest delivered entries hold the last delivery, as the other stores read it.
        counts.lastDeliveredAt = rows.values.filter { $0.entry.state == .delivered }
            .sorted { $0.entry.id > $1.entry.id }.prefix(64).compactMap(\.entry.finishedAt).max()
        return counts
    }

    func readPauses() -> PauseStatus {
        guard !pauses.isEmpty else { return PauseStatus() }
        let list = pauses.map { QueuePause(group: $0.key, pausedAt: $0.value) }
            .sorted { ($0.group != nil ? 1 : 0, $0.group ?? "") < ($1.group != nil ? 1 : 0, $1.group ?? "") }
        let held = rows.values.filter { $0.entry.state == .pending && paused($0.entry.group) }.count
        return PauseStatus(pauses: list, pendingHeld: held)
    }

    /// What is wrong with the rows: nothing, when every entry in flight names its drainer, every
    /// key points at its entry, and every body kept apart is there.
    func problems() -> [String] {
        var problems: [String] = []
        for row in rows.values.sorted(by: { $0.entry.id < $1.entry.id }) {
            let entry = row.entry
            if entry.state == .inflight && (entry.leaseOwner == nil || row.leaseUntil == nil) {
                problems.append("entry \(entry.id) is in flight without a drainer")
            }
            if byKey[entry.idempotencyKey] != entry.id { problems.append("entry \(entry.id)'s idempotency key points elsewhere") }
            if case .file(let name, _) = entry.body, bodies[name] == nil { problems.append("entry \(entry.id)'s body \(name) is missing") }
        }
        if byKey.count != rows.count { problems.append("\(byKey.count) idempotency keys for \(rows.count) entries") }
        return problems
    }
}
