import Foundation
import GRDB
import HTTPCore

/// Edits that coalesce (``EnqueueOptions/coalescingKey``): in the insert's transaction, the
/// entries open under the key are read (`entry_coalesce` holds only rows with a key that wait)
/// and ``CoalescingRule`` decides. In flight on SQLite is a lease row beside a pending entry.
extension SQLiteQueueStore {
    static func coalesce(_ db: Database, _ entry: NewEntry, key: String, now: QueueTime) throws -> CoalescingRule.Applied {
        // A request already stored under its idempotency key stays a deduplication.
        if let id = try EntryID.fetchOne(db, sql: "SELECT id FROM entry WHERE idempotency_key = ?", arguments: [entry.idempotencyKey]) {
            return .done(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: true))
        }
        let holders = try Row.fetchAll(db, sql: """
            SELECT e.id, EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = e.id) FROM entry AS e INDEXED BY entry_coalesce
            WHERE e.coalesce_key = ? AND e.state IN ('pending', 'blocked')
            """, arguments: [key]).map { CoalescingRule.Holder(id: $0[0], inFlight: $0[1]) }
        switch CoalescingRule.decide(holders) {
        case .insert:
            return .insert(behind: nil)
        case .after(let predecessor):
            return .insert(behind: predecessor)
        case .replace(let id):
            let superseded = try replace(db, id, with: entry, supersededReason: CoalescingRule.supersededReason(by: id, key: key), now: now)
            return .done(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: false, superseded: superseded))
        }
    }

    /// Entry `id` takes `entry`'s request in place (its id, group position and children stay),
    /// with a fresh budget; its old request is kept under a new id as superseded, its last error
    /// `supersededReason`. Returns that id. A coalescing enqueue and a conflict resolver's new
    /// request both replace this way.
    static func replace(_ db: Database, _ id: EntryID, with entry: NewEntry, supersededReason: String, now: QueueTime) throws -> EntryID {
        guard let old = try Row.fetchOne(db, sql: "SELECT * FROM entry WHERE id = ?", arguments: [id]) else {
            throw QueueError.noSuchEntry(id)
        }
        // Each parent read keeps what is read of it, as the parents are before the change (the
        // entry replaced among them keeps what its old request kept).
        try checkReferences(db, entry)
        let (inline, file) = entry.body.columns
        let wall = now.wall.timeIntervalSince1970
        let wait = max(0, (entry.notBefore?.timeIntervalSince1970 ?? wall) - wall)
        try db.execute(sql: """
            UPDATE entry SET idempotency_key = :key, method = :method, url = :url, headers = :headers, body = :body, body_file = :file,
                body_length = :length, scopes = :scopes, name = :name, group_key = :group, priority = :priority, timeout_ms = :timeout,
                attempts = 0, created_at = :wall, budget_from = :wall, next_attempt_at = :next, last_attempt_at = NULL, finished_at = NULL,
                waiting_network = 0, last_status = NULL, last_error = NULL, response_excerpt = NULL, dead_reason = NULL,
                clock_boot = :boot, budget_uptime = :uptime, due_uptime = :due, attempt_uptime = NULL,
                seal_key = :sealKey, seal = :seal, traceparent = :traceparent, tracestate = :tracestate,
                keep_response = :keep, response_sources = :sources, delivery = :delivery
            WHERE id = :id
            """, arguments: [
                "key": entry.idempotencyKey, "method": entry.method, "url": entry.url, "headers": LineCoding.encode(entry.headers),
                "body": inline, "file": file, "length": entry.body?.length, "scopes": LineCoding.encode(entry.scopes), "name": entry.name,
                "group": entry.group, "priority": entry.priority, "timeout": entry.timeout.map(\.saturatingMilliseconds),
                "wall": wall, "next": wall + wait, "boot": now.boot, "uptime": now.uptime, "due": now.uptime + wait,
                "sealKey": entry.seal?.keyID, "seal": entry.seal?.blob, "traceparent": entry.traceContext?.traceparent,
                "tracestate": entry.traceContext?.tracestate, "keep": entry.keepResponse?.stored, "sources": entry.storedResponseSources,
                "delivery": entry.delivery?.stored, "id": id,
            ])
        // The old request, as it was, under the next id: superseded, never to be sent.
        var columns: [String] = []
        var values: [DatabaseValue] = []
        for (column, value) in old where column != "id" {
            columns.append(column)
            switch column {
            case "state": values.append(EntryState.superseded.rawValue.databaseValue)
            case "finished_at": values.append(wall.databaseValue)
            case "last_error": values.append(supersededReason.databaseValue)
            case "coalesce_key", "dead_reason": values.append(.null)
            default: values.append(value)
            }
        }
        let superseded = try EntryID.fetchOne(db, sql: """
            INSERT INTO entry (id, \(columns.joined(separator: ", ")))
            VALUES (max((SELECT COALESCE(max(id), 0) FROM entry), (SELECT id_floor FROM queue_meta)) + 1, \(Array(repeating: "?", count: columns.count).joined(separator: ", ")))
            RETURNING id
            """, arguments: StatementArguments(values)) ?? 0
        // Parents the new request names and the old did not wait for.
        if !entry.after.isEmpty {
            let linked = Set(try EntryID.fetchAll(db, sql: "SELECT parent FROM entry_edge WHERE child = ?", arguments: [id]))
            var fresh = entry
            fresh.after = entry.after.filter { !linked.contains($0) }
            if !fresh.after.isEmpty {
                // Entry `id` keeps its children: a parent among those that wait for it would close a loop.
                if let loop = DependencyRule.loop(child: id, parents: fresh.after, below: try links(db, below: id)) {
                    throw QueueError.dependencyCycle(loop)
                }
                try link(db, child: id, fresh, now: now)
            }
        }
        return superseded
    }

    /// `child` waits behind `predecessor`, in flight under the same key: it goes once that one
    /// is settled, delivered or not (the link's own policy, `proceed`).
    static func waitBehind(_ db: Database, child: EntryID, predecessor: EntryID, now: QueueTime) throws {
        try db.execute(sql: """
            INSERT OR IGNORE INTO entry_edge (child, parent, when_parent_dies, parent_delivered) VALUES (?, ?, 'proceed', 0)
            """, arguments: [child, predecessor])
        try db.cachedStatement(sql: "UPDATE entry SET state = 'blocked' WHERE id = ?").execute(arguments: [child])
        try resolve(db, [child], now: now)
    }
}
