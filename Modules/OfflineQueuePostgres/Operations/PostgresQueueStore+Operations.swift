import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// An operator's side: pauses every drainer of the fleet honours, and bulk changes of a
/// selection, each in one transaction.
extension PostgresQueueStore {
    func addPause(group: String?, now: QueueTime) async throws(QueueError) -> Bool {
        try await transaction { connection in
            !(try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                INSERT INTO §.pause (group_key, paused_at) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING paused_at
                """)).with(group, now.wall.timeIntervalSince1970), logger: self.logger).decodeAll(Double.self).isEmpty)
        }
    }

    /// A resume wakes every drainer, as an enqueue does.
    func removePause(group: String?) async throws(QueueError) -> Bool {
        try await transaction { connection in
            let lifted = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                DELETE FROM §.pause WHERE group_key IS NOT DISTINCT FROM $1 RETURNING paused_at
                """)).with(group), logger: self.logger).decodeAll(Double.self)
            if !lifted.isEmpty { try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger) }
            return !lifted.isEmpty
        }
    }

    func readPauses() async throws(QueueError) -> PauseStatus {
        try await reading { connection in
            var pauses: [QueuePause] = []
            for try await (group, at) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT group_key, paused_at FROM §.pause ORDER BY group_key IS NOT NULL, group_key
                """)), logger: self.logger).decode((String?, Double).self) {
                pauses.append(QueuePause(group: group, pausedAt: Date(timeIntervalSince1970: at)))
            }
            guard !pauses.isEmpty else { return PauseStatus() }
            let held = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT count(*) FROM §.entry AS e WHERE e.state = 'pending' AND \(Self.paused("e"))
                """)), logger: self.logger).decodeAll(Int64.self).first ?? 0
            return PauseStatus(pauses: pauses, pendingHeld: Int(held))
        }
    }

    /// The condition (on `entry` aliased `e`, binds from `$3` on after the lock name and the
    /// states) and its values for `selection`.
    private func matching(_ selection: EntrySelection, fleet: Double) -> (String, [(any PostgresThrowingDynamicTypeEncodable & Sendable)?]) {
        var binds = PostgresBinds(offset: 2, values: [])
        let clauses = ["e.state = ANY($2)"] + Self.clauses(selection.conditions, alias: "e", fleet: fleet, &binds)
        return (clauses.joined(separator: " AND "), binds.values)
    }

    func count(matching selection: EntrySelection, now: QueueTime) async throws(QueueError) -> SelectionCount {
        let states = selection.matchedStates
        let fleet = try await fleetTime(now)
        let (condition, values) = matching(selection, fleet: fleet)
        // `$1` is the lock name in the other queries of a selection; unused here, so bound to nothing.
        var query = PostgresQuery(unsafeSQL: sql("SELECT count(*), max(e.id) FROM §.entry AS e WHERE $1::text IS NULL AND \(condition)"))
        do {
            try query.binds.bind(nil)
            try query.binds.bind(states.map(\.rawValue).sorted())
            for value in values { try query.binds.bind(value) }
        } catch {
            throw PostgresErrors.map(error, location: location)
        }
        let fixed = query
        return try await reading { connection in
            var found = SelectionCount()
            for try await (count, newest) in try await connection.query(fixed, logger: self.logger).decode((Int64, Int64?).self) {
                found = SelectionCount(count: Int(count), newest: newest)
            }
            return found
        }
    }

    /// What `selection` matches among `states`, oldest first, at most its limit, locked for the
    /// transaction; whether the drainer of one in flight lives is its advisory lock's answer.
    private func matches(
        _ selection: EntrySelection, states: Set<EntryState>, fleet: Double, on connection: PostgresConnection
    ) async throws -> [BulkMatch] {
        let (condition, values) = matching(selection, fleet: fleet)
        let limit = selection.limit.map { " LIMIT \(max(0, $0))" } ?? ""
        var query = PostgresQuery(unsafeSQL: sql("""
            SELECT e.id, e.state, e.state = 'inflight' AND \(Self.drainerLives), e.body_ref FROM §.entry AS e
            WHERE \(condition) ORDER BY e.id\(limit) FOR UPDATE
            """))
        try query.binds.bind(lockName)
        try query.binds.bind(states.map(\.rawValue).sorted())
        for value in values { try query.binds.bind(value) }
        var found: [BulkMatch] = []
        for try await (id, state, lives, body) in try await connection.query(query, logger: logger).decode((Int64, String, Bool, String?).self) {
            found.append(BulkMatch(id: id, state: try UnknownStoredValue.state(state, id: id), drainerLives: lives, bodyReference: body))
        }
        return found
    }

    private func preview(_ ids: [Int64], fleet: Double, at now: QueueTime, on connection: PostgresConnection) async throws -> [QueueEntry] {
        var entries: [QueueEntry] = []
        for try await row in try await connection.query(
            PostgresQuery(unsafeSQL: sql("SELECT \(PostgresEntryColumn.selection) FROM §.entry WHERE id = ANY($1) ORDER BY id")).with(ids), logger: logger
        ) {
            entries.append(try Self.entry(row, fleet: fleet, at: now))
        }
        return entries
    }

    /// `operation` on the rows `selection` matches, in one transaction (a dry run's too: its
    /// row locks end with it; it writes nothing); which of them change is the operation's rule.
    func change(_ operation: BulkOperation, matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange {
        let states = operation.states(of: selection)
        let fleet = try await fleetTime(now)
        return try await transaction { connection in
            let (changed, skipped) = operation.plan(try await self.matches(selection, states: states, fleet: fleet, on: connection))
            let ids = changed.map(\.id)
            var change = BulkChange(ids: ids, skipped: skipped, dryRun: dryRun)
            if dryRun {
                change.entries = try await self.preview(ids, fleet: fleet, at: now, on: connection)
                return change
            }
            guard !ids.isEmpty else { return change }
            switch operation {
            case .retry:
                try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                    UPDATE §.entry SET state = 'pending', attempts = 0, dead_reason = NULL, budget_from = $1, next_attempt_at = $1, waiting_network = false,
                        finished_at = NULL
                    WHERE id = ANY($2) AND state IN ('pending', 'dead', 'conflict')
                    """)).with(fleet, ids), logger: self.logger)
                try await self.reblock(ids, fleet: fleet, on: connection)
                try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger)
            case .purge:
                try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.entry WHERE id = ANY($1)")).with(ids), logger: self.logger)
                try await self.resolveChildren(of: ids, fleet: fleet, on: connection)
                try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger)
                let bodies = changed.compactMap(\.bodyReference)
                if !bodies.isEmpty {
                    try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.body WHERE ref = ANY($1)")).with(bodies), logger: self.logger)
                }
            case .release:
                try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.entry_edge WHERE child = ANY($1)")).with(ids), logger: self.logger)
                try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                    UPDATE §.entry SET state = 'pending', next_attempt_at = $2 WHERE id = ANY($1) AND state = 'blocked'
                    """)).with(ids, fleet), logger: self.logger)
                try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger)
            }
            return change
        }
    }
}
