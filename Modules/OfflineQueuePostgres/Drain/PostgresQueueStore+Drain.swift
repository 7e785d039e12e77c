import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// The drain's side: settlements, orphans taken back, lapsed leases and claims, each commit in
/// one statement.
extension PostgresQueueStore {
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
        if let done = try await commitWithoutClaim(settlements, now: now, lease: lease, chores: chores) { return done }
        guard !settlements.isEmpty || claimLimit > 0 || chores.reclaimOrphans else { return ClaimResult() }
        let fleet = try await fleetTime(now)
        let since = attemptedSince.map { fleet - (now.uptime - $0) }
        return try await commit(
            settlements, fleet: fleet, now: now, reclaim: chores.reclaimOrphans, claimLimit: claimLimit, lease: lease, since: since,
            flow: chores.flow
        )
    }

    func recordSettlements(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        guard !settlements.isEmpty else { return [] }
        let fleet = try await fleetTime(now)
        return try await commit(settlements, fleet: fleet, now: now, reclaim: false, claimLimit: 0, lease: .zero, since: nil).lost
    }

    /// The server's disk is not this host's to keep a reserve on: none is held.
    func holdDiskReserve() async throws(QueueError) {}

    /// One transaction per settlement, so what a server whose disk filled can still write is
    /// kept, in order.
    func recordOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        var lost: Set<EntryID> = []
        for settlement in settlements { lost.formUnion(try await recordSettlements([settlement], now: now)) }
        return lost
    }

    /// One commit of a drain, in one statement (the schema's `settle_and_claim`): records
    /// `settlements` of entries held under one of this store's numbers (those held by no one of
    /// them any more come back as lost); with `reclaim`, takes back the entries of drainers
    /// that are gone and the lapsed leases (the guard against a drainer that lives but hangs);
    /// then claims up to `claimLimit` entries under the current number.
    private func commit(
        _ settlements: [Settlement], fleet: Double, now: QueueTime, reclaim: Bool, claimLimit: Int, lease: Duration, since: Double?,
        flow: FlowSettings = FlowSettings()
    ) async throws(QueueError) -> ClaimResult {
        let owner = self.owner
        let query = commitQuery(settlements, fleet: fleet, reclaim: reclaim, claimLimit: claimLimit, lease: lease, since: since, flow: flow)
        // Requests conflict resolvers answered with take their entries' places before the
        // claim, so the claim reads them: the settlements first, claiming nothing, then the
        // replacements, then the claim, in one transaction (one more round trip, for these few).
        if settlements.contains(where: { $0.replacement != nil }) {
            let settling = commitQuery(settlements, fleet: fleet, reclaim: false, claimLimit: 0, lease: lease, since: since, flow: flow)
            let claiming = commitQuery([], fleet: fleet, reclaim: reclaim, claimLimit: claimLimit, lease: lease, since: since, flow: flow)
            return try await transaction { connection in
                var result = try await self.commit(settling, fleet: fleet, now: now, owner: owner, claimLimit: 0, on: connection)
                try await self.keepResponses(settlements.filter { $0.kept != nil && !result.lost.contains($0.id) }, on: connection)
                for settlement in settlements where !result.lost.contains(settlement.id) {
                    guard let replacement = settlement.replacement else { continue }
                    _ = try await self.replace(
                        settlement.id, with: replacement.entry, supersededReason: replacement.reason, fleet: fleet, wall: now.wall, on: connection
                    )
                }
                let claimed = try await self.commit(claiming, fleet: fleet, now: now, owner: owner, claimLimit: claimLimit, on: connection)
                result.claimed = claimed.claimed
                result.reclaimed += claimed.reclaimed
                result.heldFor = claimed.heldFor
                result.probeIn = claimed.probeIn
                result.pausedOrigins = claimed.pausedOrigins
                result.probes = claimed.probes
                return result
            }
        }
        // Responses deliveries keep go in with the settlements, in one transaction.
        if settlements.contains(where: { $0.kept != nil }) {
            let kept = settlements.filter { $0.kept != nil }
            return try await transaction { [query] connection in
                let result = try await self.commit(query, fleet: fleet, now: now, owner: owner, claimLimit: claimLimit, on: connection)
                try await self.keepResponses(kept.filter { !result.lost.contains($0.id) }, on: connection)
                return result
            }
        }
        return try await writing { [query] connection in
            try await self.commit(query, fleet: fleet, now: now, owner: owner, claimLimit: claimLimit, on: connection)
        }
    }

    /// The call of `settle_and_claim` for one commit.
    func commitQuery(
        _ settlements: [Settlement], fleet: Double, reclaim: Bool, claimLimit: Int, lease: Duration, since: Double?,
        flow: FlowSettings = FlowSettings()
    ) -> PostgresQuery {
        var query = PostgresQuery(unsafeSQL: commitCall)
        query.binds.append(heldNumbers)
        query.binds.append(fleet)
        let columns = SettlementColumns(settlements, maxPause: flow.maxPause)
        columns.bind(into: &query.binds)
        query.binds.append(reclaim)
        query.binds.append(lockName)
        query.binds.append(currentNumber)
        query.binds.append(Int32(clamping: claimLimit))
        query.binds.append(owner)
        query.binds.append(fleet + lease.seconds)
        query.binds.append(since)
        query.binds.append(columns.pauses)
        query.binds.append(Int32(clamping: flow.growAfter))
        query.binds.append(Int32(clamping: flow.ceiling))
        query.binds.append(columns.unwell)
        query.binds.append(columns.probes)
        query.binds.append(columns.jitters)
        query.binds.append(Int32(clamping: flow.openAfter))
        query.binds.append(flow.probeInterval)
        query.binds.append(flow.maxProbeInterval)
        return query
    }

    /// Runs the commit `query` on `connection` and reads what it did.
    private func commit(
        _ query: PostgresQuery, fleet: Double, now: QueueTime, owner: String, claimLimit: Int, on connection: PostgresConnection
    ) async throws -> ClaimResult {
        var result = ClaimResult()
        var claimed: [QueueEntry] = []
        claimed.reserveCapacity(claimLimit)
        var probeOrder: [EntryID] = []
        for try await row in try await connection.query(query, logger: logger) {
            let cells = row.makeRandomAccess()
            switch try cells[PostgresEntryColumn.tag].decode(String.self) {
            case "claimed": claimed.append(try Self.entry(cells, fleet: fleet, at: now, leaseOwner: owner))
            case "lost": result.lost.insert(try cells.decode(.id, as: EntryID.self))
            case "paused": result.pausedOrigins.append(try cells.decode(.url, as: String.self))
            case "probe":
                let id = try cells.decode(.id, as: EntryID.self)
                result.probes.insert(id)
                probeOrder.append(id)
            case "opened": result.opened.append(try cells.decode(.url, as: String.self))
            case "closed": result.closed.append(try cells.decode(.url, as: String.self))
            case "held":
                // Entries passed over for their origins' flow; how long until one frees by time.
                result.heldFor = try cells.decode(.nextAttemptAt, as: Double?.self).flatMap { Duration.clamped(seconds: max(0, $0)) }
                // And how long until the soonest next probe of an open circuit.
                result.probeIn = try cells.decode(.finishedAt, as: Double?.self).flatMap { Duration.clamped(seconds: max(0, $0)) }
            default: result.reclaimed += Int(try cells.decode(.id, as: Int64.self))
            }
        }
        claimed.sort { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }
        // In claim order: each open circuit's probe first, by its origin, as the statement took
        // them (and as OriginFlowBook and the other stores order them).
        if !probeOrder.isEmpty {
            let rank = Dictionary(uniqueKeysWithValues: probeOrder.enumerated().map { ($1, $0) })
            claimed = claimed.filter { rank[$0.id] != nil }.sorted { rank[$0.id]! < rank[$1.id]! } + claimed.filter { rank[$0.id] == nil }
        }
        result.claimed = claimed
        return result
    }

    /// Stores the responses `settlements` keep (each recorded as delivered by this commit), in
    /// its transaction.
    private func keepResponses(_ settlements: [Settlement], on connection: PostgresConnection) async throws {
        for settlement in settlements {
            guard let kept = settlement.kept, case .deliver = settlement.transition else { continue }
            try await connection.query(PostgresQuery(unsafeSQL: sql("""
                INSERT INTO §.entry_response (entry, seal_key, response) VALUES ($1, $2, $3)
                ON CONFLICT (entry) DO UPDATE SET seal_key = EXCLUDED.seal_key, response = EXCLUDED.response
                """)).with(settlement.id, kept.keyID, kept.bytes), logger: logger)
        }
    }

    func wakeWaiters(now: QueueTime) async throws(QueueError) -> Int {
        let fleet = try await fleetTime(now)
        return try await transaction { connection in
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.entry SET next_attempt_at = $1, waiting_network = false
                WHERE state = 'pending' AND waiting_network RETURNING id
                """)).with(fleet), logger: self.logger).decodeAll(Int64.self).count
        }
    }

    func extendLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError) {
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
}

/// Settlements as the columns `settle_and_claim` unnests, one array per field: a value that
/// does not apply to a kind is a placeholder the statement does not read.
struct SettlementColumns {
    var ids: [Int64] = []
    var kinds: [String] = []
    var attempts: [Int32] = []
    var next: [Double] = []
    var waiting: [Bool] = []
    /// `-1`: no status.
    var statuses: [Int32] = []
    var errors: [String] = []
    var excerpts: [String] = []
    var hasExcerpt: [Bool] = []
    var reasons: [String] = []
    /// A `Retry-After` pause of the origin, in seconds (at most `maxPause`); `-1`: none.
    var pauses: [Double] = []
    /// ``Settlement/unwell`` (`""`: none), ``Settlement/probe`` and ``Settlement/jitter``.
    var unwell: [String] = []
    var probes: [Bool] = []
    var jitters: [Double] = []

    init(_ settlements: [Settlement], maxPause: Double = 3600) {
        let count = settlements.count
        pauses.reserveCapacity(count)
        ids.reserveCapacity(count)
        kinds.reserveCapacity(count)
        attempts.reserveCapacity(count)
        next.reserveCapacity(count)
        waiting.reserveCapacity(count)
        statuses.reserveCapacity(count)
        errors.reserveCapacity(count)
        excerpts.reserveCapacity(count)
        hasExcerpt.reserveCapacity(count)
        reasons.reserveCapacity(count)
        unwell.reserveCapacity(count)
        probes.reserveCapacity(count)
        jitters.reserveCapacity(count)
        for settlement in settlements {
            ids.append(settlement.id)
            unwell.append(settlement.unwell ?? "")
            probes.append(settlement.probe)
            jitters.append(settlement.jitter)
            if case .retry(let retry) = settlement.transition, let pause = retry.originPause {
                pauses.append(min(max(0, pause.seconds), maxPause))
            } else {
                pauses.append(-1)
            }
            switch settlement.transition {
            case .deliver(let status):
                append("deliver", attempts: 1, status: status)
            case .retry(let retry):
                append(
                    "retry", attempts: retry.consumesAttempt ? 1 : 0, next: retry.after.seconds, waiting: retry.waitingForNetwork,
                    status: retry.status, error: retry.error, excerpt: retry.excerpt
                )
            case .deadLetter(let dead):
                append(
                    "dead", attempts: dead.consumesAttempt ? 1 : 0, status: dead.status, error: dead.error, excerpt: dead.excerpt,
                    reason: dead.reason.rawValue
                )
            case .release:
                append("release", attempts: 0)
            case .conflict(let conflict):
                append("conflict", attempts: 1, status: conflict.status, error: conflict.error, excerpt: conflict.excerpt)
            case .drop(let conflict):
                append("drop", attempts: 1, status: conflict.status, error: conflict.error, excerpt: conflict.excerpt)
            }
        }
    }

    /// `next` is a delay from the commit's time: the statement adds the fleet's time.
    private mutating func append(
        _ kind: String, attempts: Int32, next: Double = 0, waiting: Bool = false, status: Int? = nil, error: String = "",
        excerpt: String? = nil, reason: String = ""
    ) {
        kinds.append(kind)
        self.attempts.append(attempts)
        self.next.append(next)
        self.waiting.append(waiting)
        statuses.append(status.map { Int32(clamping: $0) } ?? -1)
        errors.append(error)
        excerpts.append(excerpt ?? "")
        hasExcerpt.append(excerpt != nil)
        reasons.append(reason)
    }

    /// Appends the arrays to `binds`. Each by its concrete type: through an existential, the
    /// encoding of every element allocates.
    func bind(into binds: inout PostgresBindings) {
        binds.append(ids)
        binds.append(kinds)
        binds.append(attempts)
        binds.append(next)
        binds.append(waiting)
        binds.append(statuses)
        binds.append(errors)
        binds.append(excerpts)
        binds.append(hasExcerpt)
        binds.append(reasons)
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

/// Values of a query built a condition at a time: ``add(_:)`` keeps a value and names its
/// placeholder (`$1`, `$2`, … after the `offset` placeholders bound before them).
struct PostgresBinds {
    var offset = 0
    var values: [(any PostgresThrowingDynamicTypeEncodable & Sendable)?] = []

    mutating func add(_ value: any PostgresThrowingDynamicTypeEncodable & Sendable) -> String {
        values.append(value)
        return "$\(offset + values.count)"
    }
}
