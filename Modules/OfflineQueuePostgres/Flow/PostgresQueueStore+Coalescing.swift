import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// Edits that coalesce (``EnqueueOptions/coalescingKey``) on PostgreSQL: in the insert's
/// transaction, under a transaction-scoped advisory lock of the key (so two hosts enqueueing
/// under it take turns), the entries open under it are locked and read, and
/// ``CoalescingRule`` decides. A drainer claiming one of them at that moment either commits
/// first (it is then in flight) or skips it.
extension PostgresQueueStore {
    func coalesce(_ entry: NewEntry, key: String, fleet: Double, wall: Date, on connection: PostgresConnection) async throws -> CoalescingRule.Applied {
        try await connection.query(PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .with(lockName + ":coalesce:" + key), logger: logger)
        if let id = try await connection.query(PostgresQuery(unsafeSQL: sql("SELECT id FROM §.entry WHERE idempotency_key = $1"))
            .with(entry.idempotencyKey), logger: logger).decodeAll(Int64.self).first {
            return .done(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: true))
        }
        var holders: [CoalescingRule.Holder] = []
        for try await (id, inFlight) in try await connection.query(PostgresQuery(unsafeSQL: sql("""
            SELECT id, state = 'inflight' FROM §.entry WHERE coalesce_key = $1 AND state IN ('pending', 'blocked', 'inflight')
            ORDER BY id FOR UPDATE
            """)).with(key), logger: logger).decode((Int64, Bool).self) {
            holders.append(CoalescingRule.Holder(id: id, inFlight: inFlight))
        }
        switch CoalescingRule.decide(holders) {
        case .insert:
            return .insert(behind: nil)
        case .after(let predecessor):
            return .insert(behind: predecessor)
        case .replace(let id):
            let superseded = try await replace(
                id, with: entry, supersededReason: CoalescingRule.supersededReason(by: id, key: key), fleet: fleet, wall: wall, on: connection
            )
            return .done(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: false, superseded: superseded))
        }
    }

    /// Entry `id` takes `entry`'s request in place (its id, group position and children stay),
    /// with a fresh budget; its old request is kept under a new id as superseded, its last error
    /// `supersededReason`. Returns that id. A coalescing enqueue and a conflict resolver's new
    /// request both replace this way.
    func replace(
        _ id: EntryID, with entry: NewEntry, supersededReason: String, fleet: Double, wall: Date, on connection: PostgresConnection
    ) async throws -> EntryID {
        // Each parent read keeps what is read of it, as the parents are before the change (the
        // entry replaced among them keeps what its old request kept).
        try await checkReferences(entry, on: connection)
        // The old request, copied under a new id with a key of its own for the moment (the
        // unique key is the old one's until the update below), superseded.
        let copied = PostgresEntryColumn.names.filter { $0 != "id" }
        let values = copied.map { column -> String in
            switch column {
            case "idempotency_key": "'superseded:' || idempotency_key"
            case "state": "'superseded'"
            case "finished_at": "$2"
            case "last_error": "$3"
            case "coalesce_key", "dead_reason", "lease_owner", "lease_expires_at": "NULL"
            default: column
            }
        }
        let superseded = try await connection.query(PostgresQuery(unsafeSQL: sql("""
            INSERT INTO §.entry (\(copied.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM §.entry WHERE id = $1
            RETURNING id
            """)).with(id, fleet, supersededReason), logger: logger).decodeAll(Int64.self).first ?? 0
        let (inline, reference) = entry.body.columns
        let wait = max(0, entry.notBefore?.timeIntervalSince(wall) ?? 0)
        try await connection.query(PostgresQuery(unsafeSQL: sql("""
            UPDATE §.entry SET idempotency_key = $2, method = $3, url = $4, headers = $5, body = $6, body_ref = $7, body_length = $8,
                scopes = $9, name = $10, group_key = $11, priority = $12, timeout_ms = $13, attempts = 0, created_at = $14, budget_from = $14,
                next_attempt_at = $15, last_attempt_at = NULL, finished_at = NULL, waiting_network = false, last_status = NULL,
                last_error = NULL, response_excerpt = NULL, dead_reason = NULL, seal_key = $16, seal = $17, traceparent = $18,
                tracestate = $19, keep_response = $20, response_sources = $21, delivery = $22
            WHERE id = $1
            """)).with(
                id, entry.idempotencyKey, entry.method, entry.url, LineCoding.encode(entry.headers), inline, reference,
                entry.body.map { Int64($0.length) }, LineCoding.encode(entry.scopes), entry.name, entry.group,
                Int32(clamping: entry.priority), entry.timeout.map(\.saturatingMilliseconds), fleet, fleet + wait,
                entry.seal?.keyID, entry.seal?.blob, entry.traceContext?.traceparent, entry.traceContext?.tracestate,
                entry.keepResponse?.stored, entry.storedResponseSources, entry.delivery?.stored
            ), logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: sql("""
            UPDATE §.entry SET idempotency_key = substr(idempotency_key, 12) WHERE id = $1
            """)).with(superseded), logger: logger)
        // Parents the new request names and the old did not wait for.
        let linked = try await connection.query(PostgresQuery(unsafeSQL: sql("SELECT parent FROM §.entry_edge WHERE child = $1"))
            .with(id), logger: logger).decodeAll(Int64.self)
        var fresh = entry
        fresh.after = entry.after.filter { !linked.contains($0) }
        if !fresh.after.isEmpty {
            // Entry `id` keeps its children: a parent among those that wait for it would close a loop.
            if let loop = DependencyRule.loop(child: id, parents: fresh.after, below: try await links(below: id, on: connection)) {
                throw QueueError.dependencyCycle(loop)
            }
            try await link(child: id, fresh, fleet: fleet, on: connection)
        }
        return superseded
    }

    /// `child` waits behind `predecessor`, in flight under the same key: it goes once that one
    /// is settled, delivered or not (the link's own policy, `proceed`).
    func waitBehind(child: EntryID, predecessor: EntryID, fleet: Double, on connection: PostgresConnection) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: sql("""
            INSERT INTO §.entry_edge (child, parent, when_parent_dies, parent_delivered) VALUES ($1, $2, 'proceed', false)
            ON CONFLICT DO NOTHING
            """)).with(child, predecessor), logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: sql("UPDATE §.entry SET state = 'blocked' WHERE id = $1")).with(child), logger: logger)
        try await resolve([child], fleet: fleet, on: connection)
    }
}
