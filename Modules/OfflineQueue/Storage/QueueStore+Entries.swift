import Foundation
import GRDB
import HTTPCore

/// Inserting, changing and reading entries: what enqueue, `sync` and the lookups use.
extension QueueStore {
    /// Inserts `entries` in one transaction. An entry whose caller-given key is already
    /// stored is not inserted again; its ticket points at the stored entry.
    ///
    /// Concurrent callers share a transaction, and so its `fsync` (see ``CommitGroup``); each
    /// returns once its rows are committed.
    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket] {
        if readOnly { throw Self.readOnlyRefusal(path) }
        let tickets = try await commits.insert(entries, now: now)
        if tickets.contains(where: { !$0.deduplicated }) { ringWake() }
        return tickets
    }

    /// Inserts `entries` inside the caller's transaction.
    static func insert(_ db: Database, _ entries: [NewEntry], now: QueueTime) throws -> [Ticket] {
        var tickets: [Ticket] = []
        tickets.reserveCapacity(entries.count)
        try markBoot(db, now.boot)
        // One more than the largest id there is or was (schema 8 has no AUTOINCREMENT, whose
        // sequence row would cost a page write per insert).
        let insert = try db.cachedStatement(sql: """
            INSERT INTO entry (id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name,
                group_key, priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at,
                clock_boot, budget_uptime, due_uptime, seal_key, seal)
            VALUES (
                max((SELECT COALESCE(max(id), 0) FROM entry), (SELECT id_floor FROM queue_meta)) + 1,
                ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (idempotency_key) DO NOTHING
            """)
        for entry in entries {
            let (inline, file) = entry.body.columns
            let timeout = entry.timeout.map(\.saturatingMilliseconds)
            let wall = now.wall.timeIntervalSince1970
            let wait = max(0, (entry.notBefore?.timeIntervalSince1970 ?? wall) - wall)
            try insert.execute(arguments: [
                entry.idempotencyKey, entry.method, entry.url, LineCoding.encode(entry.headers), inline, file,
                entry.body?.length, LineCoding.encode(entry.scopes), entry.name, entry.group, entry.priority, timeout,
                wall, wall, wall + wait, now.boot, now.uptime, now.uptime + wait, entry.seal?.keyID, entry.seal?.blob,
            ])
            if db.changesCount == 1 {
                tickets.append(Ticket(id: db.lastInsertedRowID, idempotencyKey: entry.idempotencyKey, deduplicated: false))
            } else {
                let id = try EntryID.fetchOne(db, sql: "SELECT id FROM entry WHERE idempotency_key = ?", arguments: [entry.idempotencyKey]) ?? 0
                tickets.append(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: true))
            }
        }
        return tickets
    }

    /// Records that a row of `boot` is written: when the open rows were all on another boot,
    /// they no longer are (`queue_meta.clock_boot` cleared, so the next drain carries over).
    /// Writes nothing when they were on `boot`, the common case.
    static func markBoot(_ db: Database, _ boot: String) throws {
        try db.cachedStatement(sql: "UPDATE queue_meta SET clock_boot = NULL WHERE clock_boot <> ?").execute(arguments: [boot])
    }

    /// Dead or pending entries become due now with a fresh budget. `nil` ids means every
    /// dead entry. Returns the ids changed.
    func retry(ids: [EntryID]?, now: QueueTime) async throws(QueueError) -> [EntryID] {
        let changed = try await write { db in
            try Self.markBoot(db, now.boot)
            let stamp: [String: (any DatabaseValueConvertible)?] = ["now": now.wall.timeIntervalSince1970, "boot": now.boot, "uptime": now.uptime]
            let set = """
                SET state = 'pending', attempts = 0, dead_reason = NULL, budget_from = :now, next_attempt_at = :now, waiting_network = 0,
                    finished_at = NULL, clock_boot = :boot, budget_uptime = :uptime, due_uptime = :uptime
                """
            guard let ids else {
                let changed = try EntryID.fetchAll(db, sql: "SELECT id FROM entry WHERE state = 'dead' AND state <> 'pending' ORDER BY id")
                try db.execute(sql: "UPDATE entry \(set) WHERE state = 'dead'", arguments: StatementArguments(stamp))
                return changed
            }
            for id in ids {
                guard let state = try String.fetchOne(db, sql: "SELECT state FROM entry_view WHERE id = ?", arguments: [id]) else {
                    throw QueueError.noSuchEntry(id)
                }
                if state == EntryState.inflight.rawValue { throw QueueError.entryInFlight(id) }
                if state == EntryState.delivered.rawValue { continue }
                try db.execute(sql: "UPDATE entry \(set) WHERE id = :id", arguments: StatementArguments(stamp.merging(["id": id]) { $1 }))
            }
            return ids
        }
        if !changed.isEmpty { ringWake() }
        return changed
    }

    /// Deletes the selected entries and then their body files. Returns how many rows went.
    func purge(_ selection: PurgeSelection, now: QueueTime) async throws(QueueError) -> Int {
        let path = self.path
        let (count, files) = try await write { db -> (Int, [String]) in
            var files: [String] = []
            var count = 0
            switch selection {
            case .states(let states, let before):
                let chosen = states.subtracting([.inflight]).map(\.rawValue)
                guard !chosen.isEmpty else { return (0, []) }
                let placeholders = databaseQuestionMarks(count: chosen.count)
                var arguments = StatementArguments(chosen)
                var timeClause = ""
                if let before {
                    timeClause = "AND COALESCE(finished_at, created_at) < ?"
                    _ = arguments.append(contentsOf: [before.timeIntervalSince1970])
                }
                // Entries in flight (with a lease) are never purged by state.
                let filter = "state IN (\(placeholders)) \(timeClause) AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)"
                files = try String.fetchAll(db, sql: "SELECT body_file FROM entry WHERE \(filter) AND body_file IS NOT NULL", arguments: arguments)
                try db.execute(sql: "DELETE FROM entry WHERE \(filter)", arguments: arguments)
                count = db.changesCount
            case .ids(let ids):
                for id in ids {
                    guard let row = try Row.fetchOne(db, sql: "SELECT state, lease_owner, body_file FROM entry_view WHERE id = ?", arguments: [id]) else {
                        throw QueueError.noSuchEntry(id)
                    }
                    let state: String = row[0]
                    let owner: String? = row[1]
                    // An entry in flight under a drainer that lives is being sent: not purged.
                    if state == EntryState.inflight.rawValue, let owner,
                       OwnerLock.liveness(of: owner, databasePath: path, boot: now.boot, takeOver: false) != .gone {
                        throw QueueError.entryInFlight(id)
                    }
                    if let file: String = row[2] { files.append(file) }
                    try db.execute(sql: "DELETE FROM entry WHERE id = ?", arguments: [id])
                    try db.execute(sql: "DELETE FROM lease WHERE entry_id = ?", arguments: [id])
                    count += 1
                }
            }
            return (count, files)
        }
        bodies.remove(files)
        return count
    }

    // MARK: - Reading

    func entry(_ id: EntryID, now: QueueTime) async throws(QueueError) -> QueueEntry? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(self.entryColumns) FROM \(self.entrySource) WHERE id = ?", arguments: [id]).map { row in try QueueEntry(row: row, path: self.path) }
        }
    }

    func entry(idempotencyKey key: String, now: QueueTime) async throws(QueueError) -> QueueEntry? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(self.entryColumns) FROM \(self.entrySource) WHERE idempotency_key = ?", arguments: [key]).map { row in try QueueEntry(row: row, path: self.path) }
        }
    }

    func entries(_ filter: EntryFilter, now: QueueTime) async throws(QueueError) -> [QueueEntry] {
        try await read { db in
            let (states, stateArguments) = self.stateClauses(filter.states)
            let (others, otherArguments) = Self.matchClauses(filter)
            var clauses = states + others
            var arguments = stateArguments + otherArguments
            if let after = filter.after {
                clauses.append("id > ?")
                _ = arguments.append(contentsOf: [after])
            }
            let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            _ = arguments.append(contentsOf: [max(0, filter.limit)])
            return try Row.fetchAll(db, sql: "SELECT \(self.entryColumns) FROM \(self.entrySource) \(whereClause) ORDER BY id LIMIT ?", arguments: arguments)
                .map { row in try QueueEntry(row: row, path: self.path) }
        }
    }

    /// The entries of `filter` among the first `scanLimit` rows of its states past its
    /// cursor: the rows are walked by id through the state's index (or the table's), and the
    /// group, name and origin are matched on those rows only.
    func entryPage(_ filter: EntryFilter, scanLimit: Int, now: QueueTime) async throws(QueueError) -> EntryPage {
        try await read { db in
            let (states, stateArguments) = self.stateClauses(filter.states)
            var window = states
            var windowArguments = stateArguments
            if !filter.states.isEmpty, filter.states.isSubset(of: [.pending, .inflight]), self.schemaVersion >= Schema.firstLeaseVersion {
                // Open entries are stored as pending rows, usually the newest: the walk in id
                // order starts at the first of them (found in the claim order's index) rather
                // than at the cursor, through every finished row before it.
                guard let first = try Self.firstPending(db, after: filter.after) else { return EntryPage(entries: [], next: nil) }
                window.append("id >= ?")
                _ = windowArguments.append(contentsOf: [first])
            } else if let after = filter.after {
                window.append("id > ?")
                _ = windowArguments.append(contentsOf: [after])
            }
            let windowWhere = window.isEmpty ? "" : "WHERE " + window.joined(separator: " AND ")
            let scan = max(scanLimit, filter.limit, 1)
            // The last row of the window, when the window is full: where a short page's next one starts.
            let windowEnd = try EntryID.fetchOne(db, sql: "SELECT id FROM \(self.entrySource) \(windowWhere) ORDER BY id LIMIT 1 OFFSET ?",
                                                 arguments: windowArguments + [scan - 1])
            let (others, otherArguments) = Self.matchClauses(filter)
            var clauses = window + others
            var arguments = windowArguments + otherArguments
            if let windowEnd {
                clauses.append("id <= ?")
                _ = arguments.append(contentsOf: [windowEnd])
            }
            _ = arguments.append(contentsOf: [max(0, filter.limit)])
            let found = try Row.fetchAll(db, sql: """
                SELECT \(self.entryColumns) FROM \(self.entrySource) WHERE \(clauses.isEmpty ? "1" : clauses.joined(separator: " AND ")) ORDER BY id LIMIT ?
                """, arguments: arguments).map { row in try QueueEntry(row: row, path: self.path) }
            if filter.limit > 0, found.count == filter.limit, let last = found.last {
                let more = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(self.entrySource) WHERE \((states + ["id > ?"]).joined(separator: " AND ")))",
                                             arguments: stateArguments + [last.id]) ?? false
                return EntryPage(entries: found, next: more ? last.id : nil)
            }
            return EntryPage(entries: found, next: windowEnd)
        }
    }

    /// The first pending row (a lease or none) past `after`: one seek per priority there is in
    /// the claim order's index, ordered by priority first.
    static func firstPending(_ db: Database, after: EntryID?) throws -> EntryID? {
        var first: EntryID?
        var below: Int?
        while let priority = try Int.fetchOne(db.cachedStatement(sql: below == nil
            ? "SELECT priority FROM entry INDEXED BY entry_pending WHERE state = 'pending' ORDER BY priority DESC LIMIT 1"
            : "SELECT priority FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND priority < ? ORDER BY priority DESC LIMIT 1"),
            arguments: below.map { [$0] } ?? []) {
            if let id = try EntryID.fetchOne(db.cachedStatement(sql: """
                SELECT id FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND priority = ? AND id > ? ORDER BY priority DESC, id LIMIT 1
                """), arguments: [priority, after ?? 0]) {
                first = min(first ?? id, id)
            }
            below = priority
        }
        return first
    }

    /// The conditions on ``entrySource`` for `states` (none for every state) and their arguments.
    func stateClauses(_ states: Set<EntryState>) -> ([String], StatementArguments) {
        guard !states.isEmpty, states.count < EntryState.allCases.count else { return ([], StatementArguments()) }
        let (condition, arguments) = stateCondition(states)
        var clauses = [condition]
        if states == [.inflight], schemaVersion >= Schema.firstLeaseVersion {
            // Driven by the few leases, not by walking every pending row for the leased ones.
            clauses.append("id IN (SELECT entry_id FROM lease)")
        }
        return (clauses, arguments)
    }

    /// The conditions on ``entrySource`` (aliased `alias`) for a filter's group, name and origin.
    static func matchClauses(_ filter: EntryFilter, alias: String? = nil) -> ([String], StatementArguments) {
        let prefix = alias.map { $0 + "." } ?? ""
        var clauses: [String] = []
        var arguments = StatementArguments()
        if let group = filter.group {
            clauses.append("\(prefix)group_key = ?")
            _ = arguments.append(contentsOf: [group])
        }
        if let name = filter.name {
            clauses.append("\(prefix)name = ?")
            _ = arguments.append(contentsOf: [name])
        }
        if let origin = filter.origin {
            // ``EntryFilter/matches(origin:url:)``: the origin, then nothing, a path or a query.
            clauses.append("(\(prefix)url = ? OR substr(\(prefix)url, 1, length(?) + 1) IN (? || '/', ? || '?'))")
            _ = arguments.append(contentsOf: [origin, origin, origin, origin])
        }
        return (clauses, arguments)
    }

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
                    counts.due = try Self.dueFromIndexes(db, pendingRows: pendingRows, now: now)
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
    static func dueFromIndexes(_ db: Database, pendingRows: Int, now: QueueTime) throws -> Int {
        let waiting = "entry.due_uptime > entry.budget_uptime AND entry.due_uptime > :uptime"
        let arguments: StatementArguments = ["uptime": now.uptime]
        var notDue = try Int.fetchOne(db.cachedStatement(sql: """
            SELECT count(*) FROM entry INDEXED BY entry_due WHERE state = 'pending' AND \(waiting)
            """), arguments: arguments) ?? 0
        for group in try String.fetchAll(db.cachedStatement(sql: "SELECT group_key FROM pause WHERE group_key IS NOT NULL")) {
            notDue += try Int.fetchOne(db.cachedStatement(sql: """
                SELECT count(*) FROM entry INDEXED BY entry_group_open
                WHERE group_key = :group AND state IN ('pending', 'inflight') AND entry.state = 'pending' AND NOT (\(waiting))
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

    /// Body file names that rows still point at.
    func referencedBodyFiles() async throws(QueueError) -> Set<String> {
        try await read { db in
            Set(try String.fetchAll(db, sql: "SELECT body_file FROM entry WHERE body_file IS NOT NULL"))
        }
    }

    /// `PRAGMA integrity_check`'s answer: `["ok"]` for a sound file.
    func integrityCheck() async throws(QueueError) -> [String] {
        try await read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }
}
