import Foundation
import GRDB
import HTTPCore

/// An operator's side of the store: bulk retries and purges of a selection, each in one
/// transaction, and pauses that every drainer's claim honours.
extension SQLiteQueueStore {
    // MARK: - Pauses

    /// A condition on an entry aliased `alias` that holds when no pause holds it back: the
    /// claim's filter, and the next due time's. Always true for an older file read as it is,
    /// which has no pause table.
    func notPaused(_ alias: String) -> String {
        guard schemaVersion >= Schema.firstPauseVersion else { return "1" }
        return Self.notPaused(alias)
    }

    static func notPaused(_ alias: String) -> String {
        "NOT EXISTS (SELECT 1 FROM pause WHERE pause.group_key IS NULL OR pause.group_key = \(alias).group_key)"
    }

    /// Pauses `group`, or the whole queue for `nil`. Returns whether it was not paused yet.
    func addPause(group: String?, now: QueueTime) async throws(QueueError) -> Bool {
        try await write { db in
            try db.execute(sql: "INSERT INTO pause (group_key, paused_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                           arguments: [group, now.wall.timeIntervalSince1970])
            return db.changesCount > 0
        }
    }

    /// Lifts the pause of `group`, or of the whole queue for `nil` (group pauses stay).
    /// Returns whether there was one.
    func removePause(group: String?) async throws(QueueError) -> Bool {
        let lifted = try await write { db in
            if let group {
                try db.execute(sql: "DELETE FROM pause WHERE group_key = ?", arguments: [group])
            } else {
                try db.execute(sql: "DELETE FROM pause WHERE group_key IS NULL")
            }
            return db.changesCount > 0
        }
        if lifted { ringWake() }
        return lifted
    }

    /// The pauses in force and the pending entries they hold back.
    func readPauses() async throws(QueueError) -> PauseStatus {
        guard schemaVersion >= Schema.firstPauseVersion else { return PauseStatus() }
        let notLeased = schemaVersion >= Schema.firstLeaseVersion ? "AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = e.id)" : ""
        return try await read { db in
            let pauses = try Row.fetchAll(db, sql: "SELECT group_key, paused_at FROM pause ORDER BY group_key IS NOT NULL, group_key")
                .map { QueuePause(group: $0[0], pausedAt: Date(timeIntervalSince1970: $0[1])) }
            guard !pauses.isEmpty else { return PauseStatus() }
            // From the indexes, not a walk of every pending row: a pause of the queue holds every
            // pending entry not in flight; a group's pause its run of the groups' index.
            var held = 0
            if pauses.contains(where: { $0.group == nil }) {
                held = try Int.fetchOne(db, sql: "SELECT count(*) FROM entry INDEXED BY entry_pending WHERE state = 'pending'") ?? 0
                if !notLeased.isEmpty {
                    held -= try Int.fetchOne(db, sql: """
                        SELECT count(*) FROM lease CROSS JOIN entry AS e ON e.id = lease.entry_id AND e.state = 'pending'
                        """) ?? 0
                }
            } else {
                for group in pauses.compactMap(\.group) {
                    held += try Int.fetchOne(db.cachedStatement(sql: """
                        SELECT count(*) FROM entry AS e INDEXED BY entry_group_open
                        WHERE e.group_key = ? AND e.state IN \(self.groupOpenStates) AND e.state = 'pending' \(notLeased)
                        """), arguments: [group]) ?? 0
                }
            }
            return PauseStatus(pauses: pauses, pendingHeld: held)
        }
    }

    // MARK: - Bulk changes

    /// The `WHERE` clause (on ``entrySource`` aliased `e`) and arguments for `selection` among `states`.
    func matching(_ selection: EntrySelection, states: Set<EntryState>, now: QueueTime) -> (String, StatementArguments) {
        let (condition, stateArguments) = stateCondition(states, alias: "e")
        let (others, otherArguments) = Self.clauses(selection.conditions, alias: "e", now: now)
        return (([condition] + others).joined(separator: " AND "), stateArguments + otherArguments)
    }

    func count(matching selection: EntrySelection, now: QueueTime) async throws(QueueError) -> SelectionCount {
        let (filter, arguments) = matching(selection, states: selection.matchedStates, now: now)
        return try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT count(*), max(e.id) FROM \(self.entrySource) AS e WHERE \(filter)", arguments: arguments) else {
                return SelectionCount()
            }
            return SelectionCount(count: row[0], newest: row[1])
        }
    }

    /// The rows `selection` matches among `states`, oldest first, at most its limit; whether the
    /// drainer of one in flight lives is its owner lock's answer.
    private func matches(_ db: Database, _ selection: EntrySelection, states: Set<EntryState>, now: QueueTime) throws -> [BulkMatch] {
        var (filter, arguments) = matching(selection, states: states, now: now)
        let limit = selection.limit.map { max(0, $0) } ?? -1
        _ = arguments.append(contentsOf: [limit])
        return try Row.fetchAll(db, sql: "SELECT e.id, e.state, e.lease_owner, e.body_file FROM \(entrySource) AS e WHERE \(filter) ORDER BY e.id LIMIT ?", arguments: arguments)
            .map { row in
                let id: EntryID = row[0]
                let state: EntryState
                do throws(UnknownStoredValue) {
                    state = try UnknownStoredValue.state(row[1], id: id)
                } catch {
                    throw error.corruptDatabase(path)
                }
                let owner: String? = row[2]
                let lives = state == .inflight && owner.map {
                    OwnerLock.liveness(of: $0, databasePath: path, boot: now.boot, takeOver: false) != .gone
                } ?? false
                return BulkMatch(id: id, state: state, drainerLives: lives, bodyReference: row[3])
            }
    }

    /// The rows of `ids` as entries, for a dry run's preview.
    private func entries(_ db: Database, ids: [EntryID]) throws -> [QueueEntry] {
        try Row.fetchAll(db, sql: "SELECT \(entryColumns) FROM \(entrySource) WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", arguments: [Self.list(ids)])
            .map { row in try QueueEntry(row: row, path: self.path) }
    }

    /// `operation` on the rows `selection` matches, in one transaction (a dry run reads only);
    /// which of them change is the operation's rule. A purge's body files go after the commit.
    func change(_ operation: BulkOperation, matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange {
        let states = operation.states(of: selection)
        let work: @Sendable (Database) throws -> (BulkChange, [String]) = { [self] db in
            let (changed, skipped) = operation.plan(try matches(db, selection, states: states, now: now))
            let ids = changed.map(\.id)
            var change = BulkChange(ids: ids, skipped: skipped, dryRun: dryRun)
            if dryRun {
                change.entries = try entries(db, ids: ids)
                return (change, [])
            }
            guard !ids.isEmpty else { return (change, []) }
            switch operation {
            case .retry:
                try Self.markBoot(db, now.boot)
                try db.execute(sql: """
                    UPDATE entry SET state = 'pending', attempts = 0, dead_reason = NULL, budget_from = :now, next_attempt_at = :now, waiting_network = 0,
                        finished_at = NULL, clock_boot = :boot, budget_uptime = :uptime, due_uptime = :uptime,
                        -- An attempt read on another boot's clock is void here, as a carry-over makes it.
                        attempt_uptime = CASE WHEN clock_boot = :boot THEN attempt_uptime END
                    WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('pending', 'dead', 'conflict')
                        AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)
                    """, arguments: ["now": now.wall.timeIntervalSince1970, "boot": now.boot, "uptime": now.uptime, "ids": Self.list(ids)])
                try Self.reblock(db, Self.list(ids), now: now)
                return (change, [])
            case .purge:
                try db.execute(sql: "DELETE FROM entry WHERE id IN (SELECT value FROM json_each(?))", arguments: [Self.list(ids)])
                // The leases of drainers that are gone go with their entries.
                try db.execute(sql: "DELETE FROM lease WHERE entry_id IN (SELECT value FROM json_each(?))", arguments: [Self.list(ids)])
                try Self.resolve(db, Self.children(db, of: Self.list(ids)), now: now)
                return (change, changed.compactMap(\.bodyReference))
            case .release:
                try Self.release(db, ids, now: now)
                return (change, [])
            }
        }
        let (change, files) = dryRun ? try await read(work) : try await write(work)
        bodies.remove(files)
        if !change.ids.isEmpty && !dryRun {
            ringWake()
            if operation == .purge { ringSettled() }
        }
        return change
    }
}
