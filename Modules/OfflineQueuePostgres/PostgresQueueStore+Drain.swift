import Foundation
import HTTPCore
import OfflineQueue
import PostgresNIO

/// The drain's side: settlements, orphans taken back, lapsed leases, claims.
extension PostgresQueueStore {
    /// The columns read into a ``QueueEntry``, in ``entry(_:fleet:at:)``'s order.
    static let entryColumns = """
        id, idempotency_key, method, url, headers, body, body_ref, body_length, scopes, name, group_key, priority,
        timeout_ms, state, attempts, created_at, budget_from, next_attempt_at, last_attempt_at, finished_at,
        waiting_network, lease_owner, lease_expires_at, last_status, last_error, response_excerpt, dead_reason
        """

    /// "The drainer holding `entry.lease_drainer` lives": its advisory lock is held.
    static let drainerLives = """
        EXISTS (SELECT 1 FROM pg_locks l
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND l.classid = hashtext($1)::oid AND l.objid = (e.lease_drainer::integer)::oid)
        """

    /// "A pause holds the entry aliased `alias`."
    static func paused(_ alias: String) -> String {
        "EXISTS (SELECT 1 FROM §.pause AS z WHERE z.group_key IS NULL OR z.group_key = \(alias).group_key)"
    }

    func settleAndClaim(
        _ settlements: [Settlement], now: QueueTime, claimLimit: Int, lease: Duration, attemptedSince: Double?, chores: ClaimChores
    ) async throws(QueueError) -> ClaimResult {
        guard !settlements.isEmpty || claimLimit > 0 || chores.reclaimOrphans else { return ClaimResult() }
        let fleet = try await fleetTime(now)
        let mine = heldNumbers
        let current = currentNumber
        let since = attemptedSince.map { fleet - (now.uptime - $0) }
        return try await transaction { connection in
            var result = ClaimResult()
            result.lost = try await self.settle(settlements, fleet: fleet, mine: mine, on: connection)
            if chores.reclaimOrphans { result.reclaimed = try await self.reclaimOrphans(current: current, on: connection) }
            if claimLimit > 0 && current >= 0 {
                result.claimed = try await self.claim(
                    limit: claimLimit, number: current, fleet: fleet, now: now, lease: lease, since: since, on: connection
                )
            }
            return result
        }
    }

    func settle(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        guard !settlements.isEmpty else { return [] }
        let fleet = try await fleetTime(now)
        let mine = heldNumbers
        return try await transaction { connection in try await self.settle(settlements, fleet: fleet, mine: mine, on: connection) }
    }

    /// The server's disk is not this host's to keep a reserve on: none is held.
    func holdReserve() async throws(QueueError) {}

    /// One transaction per settlement, so what a server whose disk filled can still write is
    /// kept, in order.
    func settleOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        var lost: Set<EntryID> = []
        for settlement in settlements { lost.formUnion(try await settle([settlement], now: now)) }
        return lost
    }

    /// Applies `settlements` of entries held under one of `mine`; returns those held by no one
    /// of them any more.
    private func settle(_ settlements: [Settlement], fleet: Double, mine: [Int64], on connection: PostgresConnection) async throws -> Set<EntryID> {
        var lost: Set<EntryID> = []
        var deliveries: [Int: [EntryID]] = [:]
        for settlement in settlements {
            if case .deliver(let status) = settlement.transition { deliveries[status, default: []].append(settlement.id) }
        }
        let release = ", lease_owner = NULL, lease_drainer = NULL, lease_expires_at = NULL"
        for (status, ids) in deliveries {
            let recorded = try await connection.query(PostgresQuery(unsafeSQL: sql("""
                UPDATE §.entry SET state = 'delivered', attempts = attempts + 1, finished_at = $1, last_status = $2,
                    last_error = NULL, waiting_network = false\(release)
                WHERE id = ANY($3) AND state = 'inflight' AND lease_drainer = ANY($4) RETURNING id
                """)).with(fleet, Int32(clamping: status), ids, mine), logger: logger).decodeAll(Int64.self)
            lost.formUnion(Set(ids).subtracting(recorded))
        }
        for settlement in settlements {
            let query: PostgresQuery
            switch settlement.transition {
            case .deliver:
                continue
            case .retry(let retry):
                query = try PostgresQuery(unsafeSQL: sql("""
                    UPDATE §.entry SET state = 'pending', attempts = attempts + $1, next_attempt_at = $2, waiting_network = $3,
                        last_status = $4, last_error = $5, response_excerpt = $6\(release)
                    WHERE id = $7 AND state = 'inflight' AND lease_drainer = ANY($8) RETURNING id
                    """)).with(
                        Int32(retry.consumesAttempt ? 1 : 0), fleet + retry.after.seconds, retry.waitingForNetwork,
                        retry.status.map { Int32(clamping: $0) }, retry.error, retry.excerpt, settlement.id, mine
                    )
            case .deadLetter(let dead):
                query = try PostgresQuery(unsafeSQL: sql("""
                    UPDATE §.entry SET state = 'dead', attempts = attempts + $1, finished_at = $2, last_status = $3,
                        dead_reason = $4, last_error = $5, response_excerpt = $6, waiting_network = false\(release)
                    WHERE id = $7 AND state = 'inflight' AND lease_drainer = ANY($8) RETURNING id
                    """)).with(
                        Int32(dead.consumesAttempt ? 1 : 0), fleet, dead.status.map { Int32(clamping: $0) }, dead.reason.rawValue,
                        dead.error, dead.excerpt, settlement.id, mine
                    )
            case .release:
                query = try PostgresQuery(unsafeSQL: sql("""
                    UPDATE §.entry SET state = 'pending'\(release)
                    WHERE id = $1 AND state = 'inflight' AND lease_drainer = ANY($2) RETURNING id
                    """)).with(settlement.id, mine)
            }
            if try await connection.query(query, logger: logger).decodeAll(Int64.self).isEmpty { lost.insert(settlement.id) }
        }
        return lost
    }

    /// Entries in flight under drainers whose lock is free go back to pending, nothing counted:
    /// those of other processes, and this one's own under a number whose connection was cut
    /// (they are sent again, as a dead drainer's are).
    private func reclaimOrphans(current: Int64, on connection: PostgresConnection) async throws -> Int {
        try await connection.query(PostgresQuery(unsafeSQL: sql("""
            UPDATE §.entry AS e SET state = 'pending', lease_owner = NULL, lease_drainer = NULL, lease_expires_at = NULL,
                last_error = 'taken back from ' || e.lease_owner || ', a drainer that is gone'
            WHERE e.state = 'inflight' AND e.lease_drainer <> $2 AND NOT \(Self.drainerLives)
            RETURNING e.id
            """)).with(lockName, current), logger: logger).decodeAll(Int64.self).count
    }

    /// Lapsed leases (a drainer that lives but hangs) back to pending, then the claim itself.
    private func claim(
        limit: Int, number: Int64, fleet: Double, now: QueueTime, lease: Duration, since: Double?, on connection: PostgresConnection
    ) async throws -> [QueueEntry] {
        try await connection.query(PostgresQuery(unsafeSQL: sql("""
            UPDATE §.entry SET state = 'pending', lease_owner = NULL, lease_drainer = NULL, lease_expires_at = NULL
            WHERE state = 'inflight' AND lease_expires_at < $1 AND lease_drainer <> $2
            """)).with(fleet, number), logger: logger)
        let once = since == nil ? "" : "AND (c.last_attempt_at IS NULL OR c.last_attempt_at < $6)"
        var query = try PostgresQuery(unsafeSQL: sql("""
            UPDATE §.entry AS e SET state = 'inflight', lease_owner = $1, lease_drainer = $2, lease_expires_at = $3,
                last_attempt_at = $4
            FROM (
                SELECT c.id FROM §.entry AS c
                -- `+ 0` keeps the planner off the due-time index: it misjudges how many rows are
                -- due and would sort every pending entry to take a few. The claim walks the claim
                -- order's index and stops at the limit.
                WHERE c.state = 'pending' AND c.next_attempt_at + 0 <= $4 \(once)
                AND NOT \(Self.paused("c"))
                AND (c.group_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM §.entry AS p
                    WHERE p.group_key = c.group_key AND p.id < c.id AND p.state IN ('pending', 'inflight')))
                ORDER BY c.priority DESC, c.id
                LIMIT $5
                FOR UPDATE SKIP LOCKED
            ) AS picked
            WHERE e.id = picked.id
            RETURNING \(Self.entryColumns.split(separator: ",").map { "e." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", "))
            """)).with(owner, number, fleet + lease.seconds, fleet, Int64(limit))
        if let since { try query.binds.bind(since) }
        var claimed: [QueueEntry] = []
        for try await row in try await connection.query(query, logger: logger) {
            claimed.append(try Self.entry(row, fleet: fleet, at: now))
        }
        return claimed.sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }
    }

    func wakeNetworkWaiters(now: QueueTime) async throws(QueueError) -> Int {
        let fleet = try await fleetTime(now)
        return try await transaction { connection in
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.entry SET next_attempt_at = $1, waiting_network = false
                WHERE state = 'pending' AND waiting_network RETURNING id
                """)).with(fleet), logger: self.logger).decodeAll(Int64.self).count
        }
    }

    func renewLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError) {
        guard !ids.isEmpty else { return }
        let fleet = try await fleetTime(now)
        let mine = heldNumbers
        _ = try await transaction { connection in
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.entry SET lease_expires_at = $1
                WHERE id = ANY($2) AND state = 'inflight' AND lease_drainer = ANY($3)
                """)).with(fleet + lease.seconds, ids, mine), logger: self.logger)
        }
    }

    /// An entry from a row of ``entryColumns``, read when the fleet's clock said `fleet` and
    /// this host's clocks said `now`. Its budget's start and its due time are turned into this
    /// host's boot clock, which the lifecycle measures age on and waits and listings show by.
    static func entry(_ row: PostgresRow, fleet: Double, at now: QueueTime) throws -> QueueEntry {
        let cells = row.makeRandomAccess()
        let inline = try cells[5].decode(Data?.self)
        let reference = try cells[6].decode(String?.self)
        let length = try cells[7].decode(Int64?.self)
        let body: StoredBody? = if let reference {
            .file(name: reference, length: Int(length ?? 0))
        } else {
            inline.map { .inline($0) }
        }
        let stateText = try cells[13].decode(String.self)
        let budgetFrom = try cells[16].decode(Double.self)
        let next = try cells[17].decode(Double.self)
        let state = EntryState(rawValue: stateText) ?? .pending
        let date = { (seconds: Double?) in seconds.map(Date.init(timeIntervalSince1970:)) }
        return QueueEntry(
            id: try cells[0].decode(Int64.self),
            idempotencyKey: try cells[1].decode(String.self),
            method: try cells[2].decode(String.self),
            url: try cells[3].decode(String.self),
            headers: LineCoding.decodeHeaders(try cells[4].decode(String.self)),
            body: body,
            scopes: LineCoding.decodeScopes(try cells[8].decode(String.self)),
            name: try cells[9].decode(String.self),
            group: try cells[10].decode(String?.self),
            priority: Int(try cells[11].decode(Int32.self)),
            timeout: try cells[12].decode(Int64?.self).map { .milliseconds($0) },
            state: state,
            attempts: Int(try cells[14].decode(Int32.self)),
            createdAt: Date(timeIntervalSince1970: try cells[15].decode(Double.self)),
            budgetStartedAt: Date(timeIntervalSince1970: budgetFrom),
            nextAttemptAt: Date(timeIntervalSince1970: next),
            lastAttemptAt: date(try cells[18].decode(Double?.self)),
            finishedAt: date(try cells[19].decode(Double?.self)),
            waitingForNetwork: try cells[20].decode(Bool.self),
            leaseOwner: try cells[21].decode(String?.self),
            leaseExpiresAt: date(try cells[22].decode(Double?.self)),
            lastStatus: try cells[23].decode(Int32?.self).map(Int.init),
            lastError: try cells[24].decode(String?.self),
            responseExcerpt: try cells[25].decode(String?.self),
            budgetUptime: now.uptime - (fleet - budgetFrom),
            deadReason: try cells[26].decode(String?.self).flatMap(DeadReason.init(rawValue:)),
            nextDue: state == .pending ? DueTime(boot: now.boot, uptime: now.uptime + (next - fleet)) : nil
        )
    }
}

extension PostgresQuery {
    /// This query with `values` bound to `$1`, `$2`, … in order (`nil` binds `NULL`).
    func with(_ values: (any PostgresThrowingDynamicTypeEncodable & Sendable)?...) throws -> PostgresQuery {
        var query = self
        for value in values { try query.binds.bind(value) }
        return query
    }
}

extension PostgresBindings {
    mutating func bind(_ value: (any PostgresThrowingDynamicTypeEncodable & Sendable)?) throws {
        guard let value else { return appendNull() }
        func open<T: PostgresThrowingDynamicTypeEncodable>(_ value: T) throws { try append(value) }
        try open(value)
    }
}

extension PostgresRowSequence {
    /// Every row's single column, decoded.
    func decodeAll<T: PostgresDecodable>(_ type: T.Type) async throws -> [T] {
        var values: [T] = []
        for try await row in self { values.append(try row.decode(T.self)) }
        return values
    }
}
