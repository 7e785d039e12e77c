import Foundation
import GRDB
import HTTPCore

/// The drain's side of the store: claims under a lease, results recorded in batches, entries
/// taken back from drainers that died, and entries woken when the network is back.
///
/// Every time rule here compares boot-clock readings (`*_uptime` columns, see ``QueueTime``);
/// wall-clock columns are written for people and for carrying rows over a reboot.
extension QueueStore {
    /// Records `settlements` and claims up to `claimLimit` entries, in one transaction: the
    /// drain loop's single commit per turn.
    func settleAndClaim(
        _ settlements: [Settlement], now: QueueTime, claimLimit: Int,
        lease: Duration, attemptedSince: Double?, chores: ClaimChores = ClaimChores()
    ) async throws(QueueError) -> ClaimResult {
        let owner = self.owner
        guard !settlements.isEmpty || claimLimit > 0 || chores.carryOver || chores.reclaimOrphans else { return ClaimResult() }
        let path = self.path
        return try await write { db in
            var result = ClaimResult()
            result.lost = try Self.settle(db, settlements, owner: owner, now: now)
            if chores.carryOver { try Self.carryOver(db, now: now, maxDelay: chores.maxDelay) }
            try Self.rebaseUntrustedReadings(db, now: now)
            if chores.reclaimOrphans { result.reclaimed = try Self.reclaimOrphans(db, owner: owner, now: now, databasePath: path) }
            if claimLimit > 0 {
                result.claimed = try Self.claim(db, limit: claimLimit, owner: owner, now: now, lease: lease, attemptedSince: attemptedSince)
            }
            return result
        }
    }

    /// Rows last written in another boot (or by a schema without boot readings) get readings of
    /// this boot: the age they had by the wall clock (never below zero), and what was left of
    /// their wait by the wall clock (never below zero, never above `maxDelay`, so a clock that
    /// was far ahead cannot stall them). Their claims died with that boot.
    static func carryOver(_ db: Database, now: QueueTime, maxDelay: Duration) throws {
        try db.cachedStatement(sql: """
            UPDATE entry SET
                budget_uptime = :uptime - MAX(0, :wall - budget_from),
                due_uptime = :uptime + MIN(MAX(0, next_attempt_at - :wall), :maxDelay),
                state = 'pending', lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL,
                attempt_uptime = NULL, clock_boot = :boot
            WHERE state IN ('pending', 'inflight') AND (clock_boot IS NULL OR clock_boot <> :boot)
            """).execute(arguments: ["uptime": now.uptime, "wall": now.wall.timeIntervalSince1970, "maxDelay": maxDelay.seconds, "boot": now.boot])
    }

    /// A row whose budget starts in the future of this boot's clock was written by a process
    /// whose clock could not be trusted (its boot clock was faked, say): its age counts from
    /// now, and it keeps only the wait it was given relative to its own reading.
    static func rebaseUntrustedReadings(_ db: Database, now: QueueTime) throws {
        try db.cachedStatement(sql: """
            UPDATE entry INDEXED BY entry_budget SET due_uptime = :uptime + MAX(0, due_uptime - budget_uptime), budget_uptime = :uptime
            WHERE state IN ('pending', 'inflight') AND budget_uptime > :uptime
            """).execute(arguments: ["uptime": now.uptime])
    }

    /// Entries in flight under drainers that are gone go back to pending at once, nothing
    /// counted. Returns how many.
    static func reclaimOrphans(_ db: Database, owner: String, now: QueueTime, databasePath: String) throws -> Int {
        let owners = try String.fetchAll(db.cachedStatement(sql: """
            SELECT DISTINCT lease_owner FROM entry INDEXED BY entry_lease
            WHERE state = 'inflight' AND lease_owner IS NOT NULL AND lease_owner <> ?
            """), arguments: [owner])
        var reclaimed = 0
        for other in owners where OwnerLock.liveness(of: other, databasePath: databasePath, boot: now.boot, takeOver: true) == .gone {
            try db.cachedStatement(sql: """
                UPDATE entry SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL,
                    last_error = 'taken back from ' || lease_owner || ', a drainer that is gone'
                WHERE state = 'inflight' AND lease_owner = ?
                """).execute(arguments: [other])
            reclaimed += db.changesCount
        }
        return reclaimed
    }

    /// Returns lapsed leases to pending (the guard against a drainer that lives but hangs),
    /// then claims up to `limit` due entries for `owner` for `lease`: the highest priority
    /// first, then the oldest, only the first open entry of each group, and none that a pause
    /// holds back.
    ///
    /// - Parameter attemptedSince: when set, skips entries attempted at or after this boot-clock
    ///   reading (for a drain that tries each entry once).
    static func claim(_ db: Database, limit: Int, owner: String, now: QueueTime, lease: Duration, attemptedSince: Double?) throws -> [QueueEntry] {
        try db.cachedStatement(sql: """
            UPDATE entry INDEXED BY entry_lease SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL
            WHERE state = 'inflight' AND lease_uptime < ? AND lease_owner <> ?
            """).execute(arguments: [now.uptime, owner])
        // One statement picks and marks the entries; RETURNING gives them back in no
        // particular order, so they are sorted again below.
        let onceClause = attemptedSince == nil ? "" : "AND (e.attempt_uptime IS NULL OR e.attempt_uptime < :since)"
        let statement = try db.cachedStatement(sql: """
            UPDATE entry SET state = 'inflight', lease_owner = :owner, lease_uptime = :until, lease_expires_at = :untilWall,
                last_attempt_at = :wall, attempt_uptime = :uptime
            WHERE id IN (
                SELECT e.id FROM entry AS e INDEXED BY entry_pending
                WHERE e.state = 'pending' AND e.due_uptime <= :uptime \(onceClause) AND \(notPaused("e"))
                AND (e.group_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM entry AS p INDEXED BY entry_group_open
                    WHERE p.group_key = e.group_key AND p.id < e.id AND p.state IN ('pending', 'inflight')))
                ORDER BY e.priority DESC, e.id
                LIMIT :limit)
            RETURNING \(Schema.entryColumns)
            """)
        var arguments: StatementArguments = [
            "owner": owner, "until": now.uptime + lease.seconds, "untilWall": now.wall.timeIntervalSince1970 + lease.seconds,
            "wall": now.wall.timeIntervalSince1970, "uptime": now.uptime, "limit": limit,
        ]
        if let attemptedSince { _ = arguments.append(contentsOf: ["since": attemptedSince]) }
        // Each row decoded straight from the statement, not copied into a `Row` first.
        var claimed: [QueueEntry] = []
        claimed.reserveCapacity(limit)
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() { claimed.append(QueueEntry(row: row)) }
        return claimed.sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }
    }

    /// Applies `settlements` of `owner`'s claims in one transaction. A settlement whose lease
    /// `owner` no longer holds (it lapsed and another drainer claimed the entry) changes
    /// nothing; the ids of those are returned.
    @discardableResult
    func settle(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        guard !settlements.isEmpty else { return [] }
        let owner = self.owner
        return try await write { db in try Self.settle(db, settlements, owner: owner, now: now) }
    }

    static func settle(_ db: Database, _ settlements: [Settlement], owner: String, now: QueueTime) throws -> Set<EntryID> {
        var lost: Set<EntryID> = []
        let wall = now.wall.timeIntervalSince1970
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
                last_error = NULL, waiting_network = 0, lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL
            WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'inflight' AND lease_owner = :owner
            RETURNING id
            """)
        for (status, ids) in deliveries {
            let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
            let recorded = Set(try EntryID.fetchAll(deliver, arguments: ["now": wall, "status": status, "ids": list, "owner": owner]))
            lost.formUnion(ids.filter { !recorded.contains($0) })
        }
        for settlement in others {
            let arguments: StatementArguments
            let sql: String
            switch settlement.transition {
            case .deliver:
                continue   // recorded above
            case .retry(let retry):
                sql = """
                    UPDATE entry SET state = 'pending', attempts = attempts + ?, next_attempt_at = ?, due_uptime = ?,
                        waiting_network = ?, last_status = ?, last_error = ?, response_excerpt = ?,
                        lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                arguments = [
                    retry.consumesAttempt ? 1 : 0, wall + retry.after.seconds, now.uptime + retry.after.seconds, retry.waitingForNetwork,
                    retry.status, retry.error, retry.excerpt, settlement.id, owner,
                ]
            case .deadLetter(let dead):
                sql = """
                    UPDATE entry SET state = 'dead', attempts = attempts + ?, finished_at = ?, last_status = ?,
                        dead_reason = ?, last_error = ?, response_excerpt = ?, waiting_network = 0,
                        lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                arguments = [dead.consumesAttempt ? 1 : 0, wall, dead.status, dead.reason.rawValue, dead.error, dead.excerpt, settlement.id, owner]
            case .release:
                sql = """
                    UPDATE entry SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                arguments = [settlement.id, owner]
            }
            try db.cachedStatement(sql: sql).execute(arguments: arguments)
            if db.changesCount == 0 { lost.insert(settlement.id) }
        }
        return lost
    }

    /// Entries waiting only for the network become due now. Returns how many.
    @discardableResult
    func wakeNetworkWaiters(now: QueueTime) async throws(QueueError) -> Int {
        try await write { db in
            try db.execute(sql: """
                UPDATE entry INDEXED BY entry_network_wait SET next_attempt_at = ?, due_uptime = ?, waiting_network = 0
                WHERE state = 'pending' AND waiting_network = 1
                """, arguments: [now.wall.timeIntervalSince1970, now.uptime])
            return db.changesCount
        }
    }

    /// Extends ``owner``'s leases on `ids` to `lease` from `now`; entries whose lease `owner`
    /// lost are left alone.
    func renewLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError) {
        guard !ids.isEmpty else { return }
        let owner = self.owner
        let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
        try await write { db in
            try db.cachedStatement(sql: """
                UPDATE entry SET lease_uptime = :until, lease_expires_at = :untilWall
                WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'inflight' AND lease_owner = :owner
                """).execute(arguments: [
                    "until": now.uptime + lease.seconds, "untilWall": now.wall.timeIntervalSince1970 + lease.seconds,
                    "ids": list, "owner": owner,
                ])
        }
    }
}
