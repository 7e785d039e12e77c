import Foundation
import OfflineQueueCore
import PostgresNIO

/// Entries that wait for others (``EnqueueOptions/after``): their links (`entry_edge`), and
/// the verdict of ``DependencyRule`` as the schema's `resolve_blocked` applies it, in the
/// transaction that inserts a child or retries or purges a parent (`settle_and_claim` applies
/// it to the children of what it settles).
extension PostgresQueueStore {
    /// Links the new entry `child` to `entry.after`'s parents, each of which must be stored,
    /// and gives it the state the rule gives it now. The parents' rows are locked first, so a
    /// drainer settling one at the same moment either commits first (the link records its
    /// delivery) or waits for this insert (and then finds the link).
    func link(child: EntryID, _ entry: NewEntry, fleet: Double, on connection: PostgresConnection) async throws {
        if let loop = DependencyRule.loop(child: child, parents: entry.after, below: []) { throw QueueError.dependencyCycle(loop) }
        var found: [EntryID] = []
        for try await id in try await connection.query(PostgresQuery(unsafeSQL: sql("""
            SELECT id FROM §.entry WHERE id = ANY($1) ORDER BY id FOR SHARE
            """)).with(entry.after), logger: logger).decode(Int64.self) {
            found.append(id)
        }
        if let missing = entry.after.first(where: { !found.contains($0) }) { throw QueueError.noSuchDependency(missing) }
        // Each parent read keeps what is read of it (the parents are locked FOR SHARE above).
        try await checkReferences(entry, on: connection)
        try await connection.query(PostgresQuery(unsafeSQL: sql("""
            INSERT INTO §.entry_edge (child, parent, when_parent_dies, parent_delivered)
            SELECT $1, id, $2, state = 'delivered' FROM §.entry WHERE id = ANY($3)
            """)).with(child, entry.whenParentDies.rawValue, entry.after), logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: sql("UPDATE §.entry SET state = 'blocked' WHERE id = $1")).with(child), logger: logger)
        try await resolve([child], fleet: fleet, on: connection)
    }

    /// Of `ids`, the entries that wait for others become blocked (after a retry), then what
    /// the rule says.
    func reblock(_ ids: [EntryID], fleet: Double, on connection: PostgresConnection) async throws {
        guard !ids.isEmpty else { return }
        let linked = try await connection.query(PostgresQuery(unsafeSQL: sql("""
            UPDATE §.entry AS e SET state = 'blocked'
            WHERE e.id = ANY($1) AND e.state = 'pending' AND EXISTS (SELECT 1 FROM §.entry_edge AS g WHERE g.child = e.id)
            RETURNING e.id
            """)).with(ids), logger: logger).decodeAll(Int64.self)
        try await resolve(linked, fleet: fleet, on: connection)
    }

    /// The children of `parents`, purged, decided.
    func resolveChildren(of parents: [EntryID], fleet: Double, on connection: PostgresConnection) async throws {
        guard !parents.isEmpty else { return }
        let children = try await connection.query(PostgresQuery(unsafeSQL: sql("""
            SELECT child FROM §.entry_edge WHERE parent = ANY($1)
            """)).with(parents), logger: logger).decodeAll(Int64.self)
        try await resolve(children, fleet: fleet, on: connection)
    }

    /// The links under `id`: each link whose parent is `id` or waits for it, at any depth.
    func links(below id: EntryID, on connection: PostgresConnection) async throws -> [DependencyRule.Link] {
        var links: [DependencyRule.Link] = []
        for try await (child, parent) in try await connection.query(PostgresQuery(unsafeSQL: sql("""
            WITH RECURSIVE below(id) AS (SELECT $1::bigint UNION SELECT g.child FROM §.entry_edge AS g JOIN below AS b ON g.parent = b.id)
            SELECT g.child, g.parent FROM §.entry_edge AS g WHERE g.parent IN (SELECT id FROM below)
            """)).with(id), logger: logger).decode((Int64, Int64).self) {
            links.append(DependencyRule.Link(child: child, parent: parent))
        }
        return links
    }

    /// Each parent `entry`'s references read keeps what is read of it.
    func checkReferences(_ entry: NewEntry, on connection: PostgresConnection) async throws {
        guard !entry.references.isEmpty else { return }
        var keeping: [EntryID: ResponseKeeping] = [:]
        for try await (id, stored) in try await connection.query(PostgresQuery(unsafeSQL: sql("""
            SELECT id, keep_response FROM §.entry WHERE id = ANY($1) AND keep_response IS NOT NULL
            """)).with(entry.responseSources), logger: logger).decode((Int64, String).self) {
            keeping[id] = ResponseKeeping(stored: stored)
        }
        try ResponseReference.check(entry.references, keeping: keeping)
    }

    func resolve(_ ids: [EntryID], fleet: Double, on connection: PostgresConnection) async throws {
        guard !ids.isEmpty else { return }
        try await connection.query(PostgresQuery(unsafeSQL: sql("SELECT §.resolve_blocked($1, $2)")).with(ids, fleet), logger: logger)
    }

    func readBlockedLinks() async throws(QueueError) -> [DependencyRule.Link] {
        try await reading { connection in
            var links: [DependencyRule.Link] = []
            for try await (child, parent) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT g.child, g.parent FROM §.entry AS c JOIN §.entry_edge AS g ON g.child = c.id JOIN §.entry AS p ON p.id = g.parent
                WHERE c.state = 'blocked' AND p.state = 'blocked' AND NOT g.parent_delivered
                """)), logger: self.logger).decode((Int64, Int64).self) {
                links.append(DependencyRule.Link(child: child, parent: parent))
            }
            return links
        }
    }

    func readDependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies {
        try await reading { connection in
            var dependencies = EntryDependencies()
            for try await (parent, policy) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT parent, when_parent_dies FROM §.entry_edge WHERE child = $1 ORDER BY parent
                """)).with(id), logger: self.logger).decode((Int64, String).self) {
                dependencies.parents.append(parent)
                dependencies.whenParentDies = ParentDeathPolicy(rawValue: policy)
            }
            dependencies.children = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT child FROM §.entry_edge WHERE parent = $1 ORDER BY child
                """)).with(id), logger: self.logger).decodeAll(Int64.self)
            return dependencies
        }
    }
}
