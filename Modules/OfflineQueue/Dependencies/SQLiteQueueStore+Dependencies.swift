import Foundation
import GRDB
import HTTPCore

/// Entries that wait for others (``EnqueueOptions/after``): their links (`entry_edge`), and
/// the rule of ``DependencyRule`` applied in the transaction that inserts a child, or settles,
/// retries or purges a parent. A blocked entry is outside the claim order's index, so a claim
/// never reads one.
extension SQLiteQueueStore {
    /// Links the new entry `child` to `entry.after`'s parents, each of which must be stored,
    /// and gives it the state the rule gives it now. In the insert's transaction.
    static func link(_ db: Database, child: EntryID, _ entry: NewEntry, now: QueueTime) throws {
        if let loop = DependencyRule.loop(child: child, parents: entry.after, below: []) { throw QueueError.dependencyCycle(loop) }
        try db.cachedStatement(sql: """
            INSERT INTO entry_edge (child, parent, when_parent_dies, parent_delivered)
            SELECT :child, id, :policy, state = 'delivered' FROM entry WHERE id IN (SELECT value FROM json_each(:parents))
            """).execute(arguments: ["child": child, "policy": entry.whenParentDies.rawValue, "parents": list(entry.after)])
        if db.changesCount != entry.after.count {
            let stored = Set(try EntryID.fetchAll(db, sql: "SELECT parent FROM entry_edge WHERE child = ?", arguments: [child]))
            throw QueueError.noSuchDependency(entry.after.first { !stored.contains($0) } ?? entry.after[0])
        }
        try checkReferences(db, entry)
        try db.cachedStatement(sql: "UPDATE entry SET state = 'blocked' WHERE id = ?").execute(arguments: [child])
        try resolve(db, [child], now: now)
    }

    /// The links under `id`: each link whose parent is `id` or waits for it, at any depth.
    static func links(_ db: Database, below id: EntryID) throws -> [DependencyRule.Link] {
        try Row.fetchAll(db.cachedStatement(sql: """
            WITH RECURSIVE below(id) AS (SELECT ? UNION SELECT g.child FROM entry_edge AS g JOIN below AS b ON g.parent = b.id)
            SELECT g.child, g.parent FROM entry_edge AS g WHERE g.parent IN below
            """), arguments: [id]).map { DependencyRule.Link(child: $0[0], parent: $0[1]) }
    }

    /// Each parent `entry`'s references read keeps what is read of it.
    static func checkReferences(_ db: Database, _ entry: NewEntry) throws {
        guard !entry.references.isEmpty else { return }
        var keeping: [EntryID: ResponseKeeping] = [:]
        for row in try Row.fetchAll(db, sql: """
            SELECT id, keep_response FROM entry WHERE id IN (SELECT value FROM json_each(?)) AND keep_response IS NOT NULL
            """, arguments: [list(entry.responseSources)]) {
            keeping[row[0]] = (row[1] as String?).flatMap(ResponseKeeping.init(stored:))
        }
        try ResponseReference.check(entry.references, keeping: keeping)
    }

    /// The children of `parents` (a JSON array of ids).
    static func children(_ db: Database, of parents: String) throws -> [EntryID] {
        try EntryID.fetchAll(db.cachedStatement(sql: "SELECT child FROM entry_edge WHERE parent IN (SELECT value FROM json_each(?))"), arguments: [parents])
    }

    /// Of `ids` (a JSON array), the entries that wait for others become blocked (after a
    /// retry), then what the rule says.
    static func reblock(_ db: Database, _ ids: String, now: QueueTime) throws {
        let linked = try EntryID.fetchAll(db.cachedStatement(sql: """
            UPDATE entry SET state = 'blocked'
            WHERE id IN (SELECT value FROM json_each(?)) AND state = 'pending' AND EXISTS (SELECT 1 FROM entry_edge WHERE child = entry.id)
                AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)
            RETURNING id
            """), arguments: [ids])
        try resolve(db, linked, now: now)
    }

    /// The blocked entries among `ids` become what ``DependencyRule/verdict(parents:policy:)``
    /// says; the children of each that dies are decided next.
    ///
    /// A released entry's readings are carried to this boot (as a drain's start carries pending
    /// rows) when it was written in another: blocked rows are not among the rows a carry-over
    /// walks.
    static func resolve(_ db: Database, _ ids: [EntryID], now: QueueTime) throws {
        var next = ids
        while !next.isEmpty {
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT g.child, g.parent, g.when_parent_dies, CASE WHEN g.parent_delivered THEN 'delivered' ELSE p.state END
                FROM entry_edge AS g JOIN entry AS c ON c.id = g.child LEFT JOIN entry AS p ON p.id = g.parent
                WHERE g.child IN (SELECT value FROM json_each(?)) AND c.state = 'blocked'
                ORDER BY g.child, g.parent
                """), arguments: [list(next)])
            var links: [EntryID: (parents: [DependencyRule.Parent], policy: ParentDeathPolicy)] = [:]
            for row in rows {
                let child: EntryID = row[0]
                // Each link's own policy: the child's, or `proceed` behind an edit in flight.
                let policy = ParentDeathPolicy(rawValue: row[2]) ?? .die
                let state: String? = row[3]
                links[child, default: ([], policy)].parents.append(
                    DependencyRule.Parent(id: row[1], state: state.flatMap(EntryState.init(rawValue:)), policy: policy)
                )
            }
            var died: [EntryID] = []
            for (child, link) in links.sorted(by: { $0.key < $1.key }) {
                switch DependencyRule.verdict(parents: link.parents, policy: link.policy) {
                case .blocked:
                    continue
                case .due:
                    try markBoot(db, now.boot)
                    try db.cachedStatement(sql: """
                        UPDATE entry SET state = 'pending',
                            budget_uptime = CASE WHEN clock_boot = :boot THEN budget_uptime ELSE :uptime - MAX(0, :wall - budget_from) END,
                            due_uptime = CASE WHEN clock_boot = :boot THEN due_uptime
                                ELSE :uptime + MIN(MAX(0, next_attempt_at - :wall), :maxDelay) END,
                            attempt_uptime = CASE WHEN clock_boot = :boot THEN attempt_uptime END,
                            clock_boot = :boot
                        WHERE id = :id AND state = 'blocked'
                        """).execute(arguments: [
                            "boot": now.boot, "uptime": now.uptime, "wall": now.wall.timeIntervalSince1970, "maxDelay": 3600.0, "id": child,
                        ])
                case .dead(let dead):
                    try db.cachedStatement(sql: """
                        UPDATE entry SET state = 'dead', dead_reason = :reason, last_error = :error, finished_at = :now, waiting_network = 0
                        WHERE id = :id AND state = 'blocked'
                        """).execute(arguments: [
                            "reason": dead.reason.rawValue, "error": dead.error, "now": now.wall.timeIntervalSince1970, "id": child,
                        ])
                    died.append(child)
                }
            }
            next = died.isEmpty ? [] : try children(db, of: list(died))
        }
    }

    /// The states of `entry_group_open`'s rows in this file's schema.
    var groupOpenStates: String {
        if schemaVersion >= Schema.firstConflictVersion { return Schema.groupOpenStates }
        return schemaVersion >= Schema.firstDependencyVersion ? "('pending', 'inflight', 'blocked')" : "('pending', 'inflight')"
    }

    func readBlockedLinks() async throws(QueueError) -> [DependencyRule.Link] {
        guard schemaVersion >= Schema.firstDependencyVersion else { return [] }
        return try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT g.child, g.parent FROM entry AS c INDEXED BY entry_state JOIN entry_edge AS g ON g.child = c.id
                    JOIN entry AS p ON p.id = g.parent
                WHERE c.state <> 'pending' AND c.state = 'blocked' AND p.state = 'blocked' AND NOT g.parent_delivered
                """).map { DependencyRule.Link(child: $0[0], parent: $0[1]) }
        }
    }

    /// The blocked entries `ids` stop waiting: their links dropped, each pending and due now
    /// (a release, ``BulkOperation/release``).
    static func release(_ db: Database, _ ids: [EntryID], now: QueueTime) throws {
        try db.execute(sql: "DELETE FROM entry_edge WHERE child IN (SELECT value FROM json_each(?))", arguments: [list(ids)])
        try markBoot(db, now.boot)
        try db.execute(sql: """
            UPDATE entry SET state = 'pending', next_attempt_at = :wall, due_uptime = :uptime,
                budget_uptime = CASE WHEN clock_boot = :boot THEN budget_uptime ELSE :uptime - MAX(0, :wall - budget_from) END,
                attempt_uptime = CASE WHEN clock_boot = :boot THEN attempt_uptime END, clock_boot = :boot
            WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'blocked'
            """, arguments: ["wall": now.wall.timeIntervalSince1970, "uptime": now.uptime, "boot": now.boot, "ids": list(ids)])
    }

    func readDependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies {
        guard schemaVersion >= Schema.firstDependencyVersion else { return EntryDependencies() }
        return try await read { db in
            let parents = try Row.fetchAll(db, sql: "SELECT parent, when_parent_dies FROM entry_edge WHERE child = ? ORDER BY parent", arguments: [id])
            let children = try EntryID.fetchAll(db, sql: "SELECT child FROM entry_edge WHERE parent = ? ORDER BY child", arguments: [id])
            return EntryDependencies(
                parents: parents.map { $0[0] }, children: children,
                whenParentDies: parents.first.flatMap { ParentDeathPolicy(rawValue: $0[1]) }
            )
        }
    }
}
