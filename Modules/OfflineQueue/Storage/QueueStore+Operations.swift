import Foundation
import GRDB
import HTTPCore

/// An operator's side of the store: bulk retries and purges of a selection, each in one
/// transaction, and pauses that every drainer's claim honours.
extension QueueStore {
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
    func pause(group: String?, now: QueueTime) async throws(QueueError) -> Bool {
        try await write { db in
            try db.execute(sql: "INSERT INTO pause (group_key, paused_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                           arguments: [group, now.wall.timeIntervalSince1970])
            return db.changesCount > 0
        }
    }

    /// Lifts the pause of `group`, or of the whole queue for `nil` (group pauses stay).
    /// Returns whether there was one.
    func resume(group: String?) async throws(QueueError) -> Bool {
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
    func pauseStatus() async throws(QueueError) -> PauseStatus {
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
                        WHERE e.group_key = ? AND e.state IN ('pending', 'inflight') AND e.state = 'pending' \(notLeased)
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
        var clauses = [condition]
        var arguments = stateArguments
        if let group = selection.group {
            clauses.append("e.group_key = ?")
            _ = arguments.append(contentsOf: [group])
        }
        if let status = selection.status {
            clauses.append("e.last_status BETWEEN ? AND ?")
            _ = arguments.append(contentsOf: [status.lowerBound, status.upperBound])
        }
        if let olderThan = selection.olderThan {
            clauses.append("COALESCE(e.finished_at, e.created_at) <= ?")
            _ = arguments.append(contentsOf: [now.wall.timeIntervalSince1970 - olderThan.seconds])
        }
        if let prefix = selection.urlPrefix {
            clauses.append("substr(e.url, 1, length(?)) = ?")
            _ = arguments.append(contentsOf: [prefix, prefix])
        }
        let (others, otherArguments) = Self.matchClauses(EntryFilter(name: selection.name, origin: selection.origin), alias: "e")
        clauses += others
        arguments += otherArguments
        if let after = selection.after {
            clauses.append("e.id > ?")
            _ = arguments.append(contentsOf: [after])
        }
        if let through = selection.through {
            clauses.append("e.id <= ?")
            _ = arguments.append(contentsOf: [through])
        }
        return (clauses.joined(separator: " AND "), arguments)
    }

    func count(matching selection: EntrySelection, now: QueueTime) async throws(QueueError) -> SelectionCount {
        let states = selection.states.isEmpty ? Set(EntryState.allCases) : selection.states
        let (filter, arguments) = matching(selection, states: states, now: now)
        return try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT count(*), max(e.id) FROM \(self.entrySource) AS e WHERE \(filter)", arguments: arguments) else {
                return SelectionCount()
            }
            return SelectionCount(count: row[0], newest: row[1])
        }
    }

    /// One matched row: enough to decide what to do with it.
    private struct Match {
        var id: EntryID
        var state: EntryState
        var owner: String?
        var bodyFile: String?
    }

    private func matches(_ db: Database, _ selection: EntrySelection, states: Set<EntryState>, now: QueueTime) throws -> [Match] {
        var (filter, arguments) = matching(selection, states: states, now: now)
        let limit = selection.limit.map { max(0, $0) } ?? -1
        _ = arguments.append(contentsOf: [limit])
        return try Row.fetchAll(db, sql: "SELECT e.id, e.state, e.lease_owner, e.body_file FROM \(entrySource) AS e WHERE \(filter) ORDER BY e.id LIMIT ?", arguments: arguments)
            .map { row in
                let id: EntryID = row[0]
                do throws(UnknownStoredValue) {
                    return Match(id: id, state: try UnknownStoredValue.state(row[1], id: id), owner: row[2], bodyFile: row[3])
                } catch {
                    throw error.corruptDatabase(path)
                }
            }
    }

    /// The rows of `ids` as entries, for a dry run's preview.
    private func entries(_ db: Database, ids: [EntryID]) throws -> [QueueEntry] {
        try Row.fetchAll(db, sql: "SELECT \(entryColumns) FROM \(entrySource) WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", arguments: [Self.list(ids)])
            .map { row in try QueueEntry(row: row, path: self.path) }
    }

    /// Makes the pending and dead entries `selection` matches due now with a fresh budget, in
    /// one transaction; entries in flight it matches are skipped, delivered ones never matched.
    /// With `dryRun`, changes nothing and says what it would do.
    func retry(matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange {
        let states = (selection.states.isEmpty ? [.pending, .dead] : selection.states).subtracting([.delivered])
        guard !states.isEmpty else { return BulkChange(dryRun: dryRun) }
        let work: @Sendable (Database) throws -> BulkChange = { [self] db in
            let found = try matches(db, selection, states: states, now: now)
            let ids = found.filter { $0.state != .inflight }.map(\.id)
            var change = BulkChange(ids: ids, skipped: found.filter { $0.state == .inflight }.map(\.id), dryRun: dryRun)
            if dryRun {
                change.entries = try entries(db, ids: ids)
            } else if !ids.isEmpty {
                try Self.markBoot(db, now.boot)
                try db.execute(sql: """
                    UPDATE entry SET state = 'pending', attempts = 0, dead_reason = NULL, budget_from = :now, next_attempt_at = :now, waiting_network = 0,
                        finished_at = NULL, clock_boot = :boot, budget_uptime = :uptime, due_uptime = :uptime
                    WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('pending', 'dead')
                        AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)
                    """, arguments: ["now": now.wall.timeIntervalSince1970, "boot": now.boot, "uptime": now.uptime, "ids": Self.list(ids)])
            }
            return change
        }
        if dryRun { return try await read(work) }
        let change = try await write(work)
        if !change.ids.isEmpty { ringWake() }
        return change
    }

    /// Deletes the entries `selection` matches (any state when it names none), in one
    /// transaction, then their body files; an entry in flight under a drainer that lives is
    /// skipped. With `dryRun`, changes nothing and says what it would do.
    func purge(matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange {
        let states = selection.states.isEmpty ? Set(EntryState.allCases) : selection.states
        let path = self.path
        let work: @Sendable (Database) throws -> (BulkChange, [String]) = { [self] db in
            let found = try matches(db, selection, states: states, now: now)
            var chosen: [Match] = []
            var skipped: [EntryID] = []
            for match in found {
                if match.state == .inflight, let owner = match.owner,
                   OwnerLock.liveness(of: owner, databasePath: path, boot: now.boot, takeOver: false) != .gone {
                    skipped.append(match.id)
                } else {
                    chosen.append(match)
                }
            }
            let ids = chosen.map(\.id)
            var change = BulkChange(ids: ids, skipped: skipped, dryRun: dryRun)
            if dryRun {
                change.entries = try entries(db, ids: ids)
                return (change, [])
            }
            if !ids.isEmpty {
                try db.execute(sql: "DELETE FROM entry WHERE id IN (SELECT value FROM json_each(?))", arguments: [Self.list(ids)])
                // The leases of drainers that are gone go with their entries.
                try db.execute(sql: "DELETE FROM lease WHERE entry_id IN (SELECT value FROM json_each(?))", arguments: [Self.list(ids)])
            }
            return (change, chosen.compactMap(\.bodyFile))
        }
        let (change, files) = dryRun ? try await read(work) : try await write(work)
        bodies.remove(files)
        return change
    }
}
