import Foundation
import GRDB
import HTTPCore

/// The drain's side of the store: claims under a lease, results recorded in batches, and
/// entries woken when the network is back.
extension QueueStore {
    /// Records `settlements` and claims up to `claimLimit` entries, in one transaction: the
    /// drain loop's single commit per turn.
    func settleAndClaim(
        _ settlements: [Settlement], owner: String, now: Date,
        claimLimit: Int, leaseUntil: Date, attemptedBefore: Date?
    ) async throws(QueueError) -> (lost: Set<EntryID>, claimed: [QueueEntry]) {
        guard !settlements.isEmpty || claimLimit > 0 else { return ([], []) }
        return try await write { db in
            let lost = try Self.settle(db, settlements, owner: owner, now: now)
            let claimed = claimLimit > 0
                ? try Self.claim(db, limit: claimLimit, owner: owner, now: now, leaseUntil: leaseUntil, attemptedBefore: attemptedBefore)
                : []
            return (lost, claimed)
        }
    }

    /// In one transaction: returns lapsed leases to pending, then claims up to `limit` due
    /// entries for `owner` until `leaseUntil`: the highest priority first, then the oldest, and
    /// only the first open entry of each group.
    ///
    /// - Parameter attemptedBefore: when set, skips entries attempted at or after it (for a
    ///   drain that tries each entry once).
    static func claim(_ db: Database, limit: Int, owner: String, now: Date, leaseUntil: Date, attemptedBefore: Date?) throws -> [QueueEntry] {
        try db.cachedStatement(sql: """
            UPDATE entry SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL
            WHERE state = 'inflight' AND lease_expires_at < ?
            """).execute(arguments: [now.timeIntervalSince1970])
        // One statement picks and marks the entries; RETURNING gives them back in no
        // particular order, so they are sorted again below.
        let onceClause = attemptedBefore == nil ? "" : "AND (e.last_attempt_at IS NULL OR e.last_attempt_at < :cutoff)"
        let statement = try db.cachedStatement(sql: """
            UPDATE entry SET state = 'inflight', lease_owner = :owner, lease_expires_at = :until, last_attempt_at = :now
            WHERE id IN (
                SELECT e.id FROM entry AS e INDEXED BY entry_pending
                WHERE e.state = 'pending' AND e.next_attempt_at <= :now \(onceClause)
                AND (e.group_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM entry AS p INDEXED BY entry_group_open
                    WHERE p.group_key = e.group_key AND p.id < e.id AND p.state IN ('pending', 'inflight')))
                ORDER BY e.priority DESC, e.id
                LIMIT :limit)
            RETURNING \(Schema.entryColumns)
            """)
        var arguments: StatementArguments = [
            "owner": owner, "until": leaseUntil.timeIntervalSince1970, "now": now.timeIntervalSince1970, "limit": limit,
        ]
        if let attemptedBefore { _ = arguments.append(contentsOf: ["cutoff": attemptedBefore.timeIntervalSince1970]) }
        return try Row.fetchAll(statement, arguments: arguments)
            .map(QueueEntry.init(row:))
            .sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }
    }

    /// Applies `settlements` of `owner`'s claims in one transaction. A settlement whose lease
    /// `owner` no longer holds (it lapsed and another drainer claimed the entry) changes
    /// nothing; the ids of those are returned.
    @discardableResult
    func settle(_ settlements: [Settlement], owner: String, now: Date) async throws(QueueError) -> Set<EntryID> {
        guard !settlements.isEmpty else { return [] }
        return try await write { db in try Self.settle(db, settlements, owner: owner, now: now) }
    }

    static func settle(_ db: Database, _ settlements: [Settlement], owner: String, now: Date) throws -> Set<EntryID> {
        var lost: Set<EntryID> = []
        let stamp = now.timeIntervalSince1970
        // Deliveries, the common case, in one statement per status.
        var deliveries: [Int: [EntryID]] = [:]
        var others: [Settlement] = []
        for settlement in settlements {
            if case .deliver(let status) = settlement.transition {
                deliveries[status, default: []].append(settlement.id)
            } else {
                others.append(settlement)
            }
        }
        let deliver = try db.cachedStatement(sql: """
            UPDATE entry SET state = 'delivered', attempts = attempts + 1, finished_at = :now, last_status = :status,
                last_error = NULL, waiting_network = 0, lease_owner = NULL, lease_expires_at = NULL
            WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'inflight' AND lease_owner = :owner
            RETURNING id
            """)
        for (status, ids) in deliveries {
            let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
            let recorded = Set(try EntryID.fetchAll(deliver, arguments: ["now": stamp, "status": status, "ids": list, "owner": owner]))
            lost.formUnion(ids.filter { !recorded.contains($0) })
        }
        for settlement in others {
            let arguments: StatementArguments
            let sql: String
            switch settlement.transition {
            case .deliver:
                continue   // recorded above
            case .retry(let at, let consumes, let waiting, let status, let error, let excerpt):
                sql = """
                    UPDATE entry SET state = 'pending', attempts = attempts + ?, next_attempt_at = ?, waiting_network = ?,
                        last_status = ?, last_error = ?, response_excerpt = ?, lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                arguments = [consumes ? 1 : 0, at.timeIntervalSince1970, waiting, status, error, excerpt, settlement.id, owner]
            case .deadLetter(let reason, let status, let error, let excerpt):
                sql = """
                    UPDATE entry SET state = 'dead', attempts = attempts + ?, finished_at = ?, last_status = ?,
                        last_error = ?, response_excerpt = ?, waiting_network = 0, lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                let counted = reason == .expired && status == nil ? 0 : 1
                arguments = [counted, stamp, status, "\(reason.rawValue): \(error)", excerpt, settlement.id, owner]
            case .release:
                sql = """
                    UPDATE entry SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                arguments = [settlement.id, owner]
            }
            try db.cachedStatement(sql: sql).execute(arguments: arguments)
            if db.changesCount == 0 { lost.insert(settlement.id) }
        }
        return lost
    }

    /// Entries waiting only for the network become due at `now`. Returns how many.
    @discardableResult
    func wakeNetworkWaiters(now: Date) async throws(QueueError) -> Int {
        try await write { db in
            try db.execute(sql: """
                UPDATE entry INDEXED BY entry_network_wait SET next_attempt_at = ?, waiting_network = 0
                WHERE state = 'pending' AND waiting_network = 1
                """, arguments: [now.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// Extends `owner`'s leases on `ids` to `until`; entries whose lease `owner` lost are left
    /// alone.
    func renewLeases(_ ids: [EntryID], owner: String, until: Date) async throws(QueueError) {
        guard !ids.isEmpty else { return }
        let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
        try await write { db in
            try db.cachedStatement(sql: """
                UPDATE entry SET lease_expires_at = :until
                WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'inflight' AND lease_owner = :owner
                """).execute(arguments: ["until": until.timeIntervalSince1970, "ids": list, "owner": owner])
        }
    }
}
