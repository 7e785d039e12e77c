import Foundation
import GRDB
import HTTPCore

/// Counting entries: the counts by state, the due count and the oldest pending (for `sync
/// stats`, the gauges and the console's overview), and the tally by group and name.
extension SQLiteQueueStore {
    /// Entries by group, name and state among the newest `newest` (a walk of the table's id
    /// order from its end), the network waiters (their index), and the deliveries of the last
    /// minutes (a walk of the newest delivered rows in the finished rows' index).
    func tally(newest: Int, now: QueueTime) async throws(QueueError) -> EntryTally {
        let path = self.path
        let leases = schemaVersion >= Schema.firstLeaseVersion
        let notLeased = leases ? "AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)" : ""
        let finished = schemaVersion >= Schema.firstLeanInsertVersion ? "INDEXED BY entry_state" : ""
        return try await read { db in
            var tally = EntryTally()
            // The rows as stored (a join with the leases per row would double the walk), then
            // the few leased ones among them moved to in flight, as `entry_view` shows them.
            // Counted here, not by a GROUP BY, whose sort of every row was most of the time.
            var stored: [StoredKey: StoredCount] = [:]
            var oldest: EntryID?
            let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT group_key, name, state, id FROM entry ORDER BY id DESC LIMIT ?"),
                                           arguments: [max(0, newest)])
            while let row = try rows.next() {
                let id: EntryID = row[3]
                stored[StoredKey(group: row[0], name: row[1], state: row[2]), default: StoredCount(first: id)].add(id)
                oldest = id
            }
            for (key, count) in stored {
                do throws(UnknownStoredValue) {
                    let state = try UnknownStoredValue.state(key.state, id: count.first)
                    tally.counts[EntryTally.Key(group: key.group, name: key.name, state: state), default: 0] += count.count
                } catch {
                    throw error.corruptDatabase(path)
                }
                tally.examined += count.count
            }
            if leases, let oldest {
                for row in try Row.fetchAll(db, sql: """
                    SELECT entry.group_key, entry.name, entry.state, count(*), min(entry.id) FROM lease CROSS JOIN entry ON entry.id = lease.entry_id
                    WHERE lease.entry_id >= ? GROUP BY entry.group_key, entry.name, entry.state
                    """, arguments: [oldest]) {
                    let count: Int = row[3]
                    do throws(UnknownStoredValue) {
                        let stored = EntryTally.Key(group: row[0], name: row[1], state: try UnknownStoredValue.state(row[2], id: row[4]))
                        tally.counts[stored, default: 0] -= count
                        if tally.counts[stored] == 0 { tally.counts[stored] = nil }
                        tally.counts[EntryTally.Key(group: stored.group, name: stored.name, state: .inflight), default: 0] += count
                    } catch {
                        throw error.corruptDatabase(path)
                    }
                }
            }
            tally.waitingForNetwork = try Int.fetchOne(db, sql: """
                SELECT count(*) FROM entry INDEXED BY entry_network_wait WHERE state = 'pending' AND waiting_network = 1 \(notLeased)
                """) ?? 0
            let wall = now.wall.timeIntervalSince1970
            if let row = try Row.fetchOne(db, sql: """
                SELECT count(*) FILTER (WHERE finished_at >= ?), count(*) FILTER (WHERE finished_at >= ?) FROM (
                    SELECT finished_at FROM entry \(finished) WHERE state = 'delivered' AND state <> 'pending' ORDER BY id DESC LIMIT ?)
                """, arguments: [wall - 60, wall - 300, EntryTally.deliveryWindow]) {
                tally.deliveredLastMinute = row[0]
                tally.deliveredLastFiveMinutes = row[1]
            }
            return tally
        }
    }

    /// A tally's key as the row stores it, its state not decoded yet.
    private struct StoredKey: Hashable {
        var group: String?
        var name: String
        var state: String
    }

    /// How many rows of a ``StoredKey`` the tally met, and the oldest (it names a bad row).
    private struct StoredCount {
        var count = 0
        var first: EntryID

        mutating func add(_ id: EntryID) {
            count += 1
            first = min(first, id)
        }
    }

    func counts(now: QueueTime) async throws(QueueError) -> QueueCounts {
        let path = self.path
        let leases = schemaVersion >= Schema.firstLeaseVersion
        // Of schema 6 on, an entry in flight is a pending row with a lease.
        let notLeased = leases ? "AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)" : ""
        return try await read { db in
            var counts = QueueCounts()
            counts.pending = try Int.fetchOne(db, sql: "SELECT count(*) FROM entry INDEXED BY entry_pending WHERE state = 'pending'") ?? 0
            let pendingRows = counts.pending
            // The other states one at a time, each found by a seek in the state index and then
            // counted over its range: a third of a GROUP BY's time over a million finished rows.
            // A state this version does not know is an error naming its first row.
            var after = ""
            while let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT state, id FROM entry INDEXED BY entry_state WHERE state <> 'pending' AND state > ? ORDER BY state, id LIMIT 1
                """), arguments: [after]) {
                let name: String = row[0]
                let count = try Int.fetchOne(db.cachedStatement(sql: """
                    SELECT count(*) FROM entry INDEXED BY entry_state WHERE state = ? AND state <> 'pending'
                    """), arguments: [name]) ?? 0
                do throws(UnknownStoredValue) {
                    switch try UnknownStoredValue.state(row[0], id: row[1]) {
                    case .pending: counts.pending += count
                    case .inflight: counts.inflight = count
                    case .delivered: counts.delivered = count
                    case .dead: counts.dead = count
                    case .blocked: counts.blocked = count
                    case .superseded: counts.superseded = count
                    case .conflict: counts.conflict = count
                    }
                } catch {
                    throw error.corruptDatabase(path)
                }
                after = name
            }
            counts.oldestPendingCreatedAt = try Self.oldestPending(db, notLeased: notLeased).map(Date.init(timeIntervalSince1970:))
            // Rows of this boot are due by the boot clock, shown as wall time; rows not yet carried
            // over from another boot by their stored wall time.
            let lean = self.schemaVersion >= Schema.firstLeanInsertVersion
            // Schema 8: rows of other boots only when `queue_meta` does not say all are on this one.
            let otherBoots = try !lean || Row.fetchOne(db, sql: "SELECT clock_boot FROM queue_meta").map { $0[0] as String? != now.boot } ?? true
            // Entries a pause holds back are not due: the index is walked in due order up to
            // the first entry no pause holds. Of schema 8 on, it holds the entries given a wait;
            // one that was not is due from its start, and the claim order's index finds one: any
            // one, since each is due (its start lies behind), walked from the newest, the likeliest
            // never to have been tried (the oldest are often waiting a backoff).
            let waited = lean ? "AND due_uptime > budget_uptime" : ""
            var due = try Double.fetchOne(db, sql: """
                SELECT due_uptime FROM entry WHERE state = 'pending' \(waited) AND clock_boot = ? AND \(self.notPaused("entry"))
                \(notLeased) ORDER BY due_uptime LIMIT 1
                """, arguments: [now.boot])
            var fresh: Double?
            if lean {
                fresh = try Double.fetchOne(db, sql: """
                    SELECT due_uptime FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND due_uptime <= budget_uptime
                    AND clock_boot = ? AND \(self.notPaused("entry")) \(notLeased) ORDER BY priority, id DESC LIMIT 1
                    """, arguments: [now.boot])
                due = [due, fresh].compactMap { $0 }.min()
            }
            let carried = otherBoots ? try Double.fetchOne(db, sql: """
                SELECT min(next_attempt_at) FROM entry WHERE state = 'pending' AND (clock_boot IS NULL OR clock_boot <> ?) AND \(self.notPaused("entry"))
                \(notLeased)
                """, arguments: [now.boot]) : nil
            // A row of another boot waits what its wall time says is left (as the drain that
            // carries it over will decide), counted from this reading.
            let carriedUptime = carried.map { now.uptime + max(0, $0 - now.wall.timeIntervalSince1970) }
            if let next = [due, carriedUptime].compactMap({ $0 }).min() {
                counts.nextDue = DueTime(boot: now.boot, uptime: next)
                counts.nextAttemptAt = now.wallTime(atUptime: next)
            }
            if due.map({ $0 <= now.uptime }) ?? false {
                if lean && !otherBoots {
                    counts.due = try Self.dueFromIndexes(db, pendingRows: pendingRows, now: now, groupOpen: self.groupOpenStates)
                } else {
                    // Walks the due part of the index only (and of schema 8, the claim order's
                    // index for the entries due from their start, row by row).
                    counts.due = try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM entry WHERE state = 'pending' \(waited) AND due_uptime <= ? AND clock_boot = ?
                        AND \(self.notPaused("entry")) \(notLeased)
                        """, arguments: [now.uptime, now.boot]) ?? 0
                    if fresh != nil {
                        counts.due += try Int.fetchOne(db, sql: """
                            SELECT count(*) FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND due_uptime <= budget_uptime
                            AND due_uptime <= ? AND clock_boot = ? AND \(self.notPaused("entry")) \(notLeased)
                            """, arguments: [now.uptime, now.boot]) ?? 0
                    }
                }
            }
            if carriedUptime.map({ $0 <= now.uptime }) ?? false {
                counts.due += try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM entry WHERE state = 'pending' AND (clock_boot IS NULL OR clock_boot <> ?) AND next_attempt_at <= ?
                    AND \(self.notPaused("entry")) \(notLeased)
                    """, arguments: [now.boot, now.wall.timeIntervalSince1970]) ?? 0
            }
            // Entries whose origin's flow holds them back are not due (FlowControl): counted
            // apart, a walk of the claim order's index per origin held, only while one is.
            if counts.due > 0, self.schemaVersion >= Schema.firstFlowVersion, try Self.hasFlowRows(db) {
                let book = OriginFlowBook(
                    try Self.flowRows(db, now: now, health: self.schemaVersion >= Schema.firstHealthVersion), inflight: try Self.inflightByOrigin(db),
                    now: now.uptime
                )
                for origin in book.heldOrigins {
                    counts.heldByFlow += try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND due_uptime <= ? AND clock_boot = ?
                        AND (url = ? OR substr(url, 1, length(?) + 1) IN (? || '/', ? || '?')) AND \(self.notPaused("entry")) \(notLeased)
                        """, arguments: [now.uptime, now.boot, origin, origin, origin, origin]) ?? 0
                }
                counts.heldByFlow = min(counts.heldByFlow, counts.due)
                counts.due -= counts.heldByFlow
            }
            // The newest delivered entries hold the last delivery, unless delivered far out of order.
            counts.lastDeliveredAt = try Double.fetchOne(db, sql: """
                SELECT max(finished_at) FROM (SELECT finished_at FROM entry INDEXED BY entry_state WHERE state = 'delivered' AND state <> 'pending' ORDER BY id DESC LIMIT 64)
                """).map(Date.init(timeIntervalSince1970:))
            // Driven by the few leases (CROSS JOIN keeps them the outer loop): the planner
            // otherwise walks every pending entry for the leased ones.
            let owners = leases
                ? "SELECT owner, count(*) FROM lease CROSS JOIN entry ON entry.id = lease.entry_id AND entry.state = 'pending' GROUP BY owner"
                : "SELECT lease_owner, count(*) FROM entry INDEXED BY entry_lease WHERE state = 'inflight' GROUP BY lease_owner"
            if leases {
                counts.inflight = try Int.fetchOne(db, sql: "SELECT count(*) FROM lease CROSS JOIN entry ON entry.id = lease.entry_id AND entry.state = 'pending'") ?? 0
                counts.pending -= counts.inflight
            }
            if counts.inflight > 0 {
                for row in try Row.fetchAll(db, sql: owners) {
                    let owner: String? = row[0]
                    let count: Int = row[1]
                    if let owner, OwnerLock.liveness(of: owner, databasePath: path, boot: now.boot, takeOver: false) == .gone {
                        counts.inflightOrphaned += count
                    } else if let owner {
                        counts.drainers.append(owner)
                        if owner == self.owner { counts.inflightHere += count }
                    }
                }
            }
            return counts
        }
    }

    /// The due entries when every open row is on this boot (`queue_meta.clock_boot`, schema 8)
    /// and no pause holds the whole queue, from the indexes rather than row by row: the pending
    /// rows (the claim order's index) less those that are not due, which are
    /// - those given a wait not over yet (a range of `entry_due`, counted in the index alone),
    /// - those of a paused group not counted there (each group's run of its index),
    /// - those in flight not counted there (driven by the few leases).
    ///
    /// The one difference from reading each row: an entry due from its start, when its start lies
    /// ahead of this reading of the boot clock, counts as due. Only a write whose clock reads
    /// ahead of this one's makes such a row: one committed between the counts' clock reading and
    /// their transaction (due by the time anyone reads the count), or one of a process whose boot
    /// clock could not be trusted, which the next drain's start rebases to due at once.
    static func dueFromIndexes(_ db: Database, pendingRows: Int, now: QueueTime, groupOpen: String) throws -> Int {
        let waiting = "entry.due_uptime > entry.budget_uptime AND entry.due_uptime > :uptime"
        let arguments: StatementArguments = ["uptime": now.uptime]
        var notDue = try Int.fetchOne(db.cachedStatement(sql: """
            SELECT count(*) FROM entry INDEXED BY entry_due WHERE state = 'pending' AND \(waiting)
            """), arguments: arguments) ?? 0
        for group in try String.fetchAll(db.cachedStatement(sql: "SELECT group_key FROM pause WHERE group_key IS NOT NULL")) {
            notDue += try Int.fetchOne(db.cachedStatement(sql: """
                SELECT count(*) FROM entry INDEXED BY entry_group_open
                WHERE group_key = :group AND state IN \(groupOpen) AND entry.state = 'pending' AND NOT (\(waiting))
                """), arguments: arguments + ["group": group]) ?? 0
        }
        notDue += try Int.fetchOne(db.cachedStatement(sql: """
            SELECT count(*) FROM lease CROSS JOIN entry ON entry.id = lease.entry_id
            WHERE entry.state = 'pending' AND \(notPaused("entry")) AND NOT (\(waiting))
            """), arguments: arguments) ?? 0
        return max(0, pendingRows - notDue)
    }

    /// When the oldest pending entry not in flight was made: the first of each priority's run
    /// in the claim order's index, one short walk per priority there is (the index is ordered
    /// by priority first; schema 8 keeps no index of pending entries by id alone).
    static func oldestPending(_ db: Database, notLeased: String) throws -> Double? {
        var oldest: (id: EntryID, created: Double)?
        var below: Int?
        // Bounded: one turn per distinct priority of a pending entry.
        while true {
            let priority = try Int.fetchOne(db.cachedStatement(sql: below == nil
                ? "SELECT priority FROM entry INDEXED BY entry_pending WHERE state = 'pending' ORDER BY priority DESC LIMIT 1"
                : "SELECT priority FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND priority < ? ORDER BY priority DESC LIMIT 1"),
                arguments: below.map { [$0] } ?? [])
            guard let priority else { return oldest?.created }
            if let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT id, created_at FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND priority = ? \(notLeased)
                ORDER BY priority DESC, id LIMIT 1
                """), arguments: [priority]) {
                let id: EntryID = row[0]
                if id < oldest?.id ?? .max { oldest = (id, row[1]) }
            }
            below = priority
        }
    }
}
