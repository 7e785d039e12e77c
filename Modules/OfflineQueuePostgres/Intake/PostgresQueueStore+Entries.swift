import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// Inserting, changing and reading entries; retention. Bodies: PostgresQueueStore+Bodies.swift.
extension PostgresQueueStore {
    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket] {
        let fleet = try await fleetTime(now)
        let wall = now.wall
        return try await transaction { connection in try await self.insert(entries, fleet: fleet, wall: wall, on: connection) }
    }

    /// Inserts `entries` in the transaction open on `connection` (the store's, or a caller's own
    /// for the outbox), and notifies the drainers, which hear it once the transaction commits.
    func insert(_ entries: [NewEntry], fleet: Double, wall: Date, on connection: PostgresConnection) async throws -> [Ticket] {
        var tickets: [Ticket] = []
        tickets.reserveCapacity(entries.count)
        for entry in entries {
            // An edit that coalesces takes the place of the one waiting under its key, or
            // waits behind the one in flight.
            var behind: EntryID?
            if let key = entry.coalescingKey {
                switch try await coalesce(entry, key: key, fleet: fleet, wall: wall, on: connection) {
                case .done(let ticket):
                    tickets.append(ticket)
                    continue
                case .insert(let predecessor):
                    behind = predecessor
                }
            }
            let (inline, reference) = entry.body.columns
            // `notBefore` is a wall-clock instant: the wait it leaves now, on the fleet's clock.
            let wait = max(0, (entry.notBefore?.timeIntervalSince(wall) ?? 0))
            let inserted = try await connection.query(PostgresQuery(unsafeSQL: sql("""
                INSERT INTO §.entry (idempotency_key, method, url, headers, body, body_ref, body_length, scopes, name,
                    group_key, priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at, seal_key, seal,
                    traceparent, tracestate, keep_response, response_sources, coalesce_key, delivery)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', 0, $13, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
                ON CONFLICT (idempotency_key) DO NOTHING
                RETURNING id
                """)).with(
                    entry.idempotencyKey, entry.method, entry.url, LineCoding.encode(entry.headers), inline, reference,
                    entry.body.map { Int64($0.length) }, LineCoding.encode(entry.scopes), entry.name, entry.group,
                    Int32(clamping: entry.priority), entry.timeout.map(\.saturatingMilliseconds), fleet, fleet + wait,
                    entry.seal?.keyID, entry.seal?.blob, entry.traceContext?.traceparent, entry.traceContext?.tracestate,
                    entry.keepResponse?.stored, entry.storedResponseSources, entry.coalescingKey, entry.delivery?.stored
                ), logger: logger).decodeAll(Int64.self)
            if let id = inserted.first {
                if !entry.after.isEmpty { try await link(child: id, entry, fleet: fleet, on: connection) }
                if let behind { try await waitBehind(child: id, predecessor: behind, fleet: fleet, on: connection) }
                tickets.append(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: false))
            } else {
                let id = try await connection.query(PostgresQuery(unsafeSQL: sql("SELECT id FROM §.entry WHERE idempotency_key = $1"))
                    .with(entry.idempotencyKey), logger: logger).decodeAll(Int64.self).first ?? 0
                tickets.append(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: true))
            }
        }
        if tickets.contains(where: { !$0.deduplicated }) {
            try await connection.query("SELECT pg_notify(\(channel), '')", logger: logger)
        }
        return tickets
    }

    // MARK: - Changing

    // MARK: - Reading

    /// The operator's one read (``QueueOperatorStorage/entries(_:now:)``): a page when the
    /// query bounds its scan, else every match up to its limit.
    func entries(_ query: EntryQuery, now: QueueTime) async throws(QueueError) -> EntryPage {
        if let scanLimit = query.scanLimit { return try await page(query, scanLimit: scanLimit, now: now) }
        let found = try await list(query, now: now)
        return EntryPage(entries: found, next: query.limit > 0 && found.count == query.limit ? found.last?.id : nil)
    }

    private func list(_ filter: EntryQuery, now: QueueTime) async throws(QueueError) -> [QueueEntry] {
        var binds = PostgresBinds()
        var clauses = Self.stateClauses(filter.states, &binds) + Self.clauses(filter.conditions, alias: nil, &binds)
        if let after = filter.after { clauses.append("id > \(binds.add(after))") }
        let condition = (clauses.isEmpty ? "true" : clauses.joined(separator: " AND ")) + " ORDER BY id LIMIT \(binds.add(Int64(max(0, filter.limit))))"
        return try await entries(at: now, where: condition, binds.values)
    }

    /// The entries of `filter` among the first `scanLimit` rows of its states past its cursor
    /// (walked by id through the `(state, id)` index or the primary key); group, name and
    /// origin are matched on those rows only.
    private func page(_ filter: EntryQuery, scanLimit: Int, now: QueueTime) async throws(QueueError) -> EntryPage {
        var windowBinds = PostgresBinds()
        var window = Self.stateClauses(filter.states, &windowBinds)
        if let after = filter.after { window.append("id > \(windowBinds.add(after))") }
        let windowWhere = window.isEmpty ? "true" : window.joined(separator: " AND ")
        let scan = max(scanLimit, filter.limit, 1)
        var endQuery = PostgresQuery(unsafeSQL: sql("SELECT id FROM §.entry WHERE \(windowWhere) ORDER BY id OFFSET \(scan - 1) LIMIT 1"))
        do {
            for value in windowBinds.values { try endQuery.binds.bind(value) }
        } catch {
            throw PostgresErrors.map(error, location: location)
        }
        let fixedEnd = endQuery
        let windowEnd = try await reading { connection in
            try await connection.query(fixedEnd, logger: self.logger).decodeAll(Int64.self).first
        }
        var binds = windowBinds
        var clauses = window + Self.clauses(filter.conditions, alias: nil, &binds)
        if let windowEnd { clauses.append("id <= \(binds.add(windowEnd))") }
        let found = try await entries(
            at: now, where: (clauses.isEmpty ? "true" : clauses.joined(separator: " AND ")) + " ORDER BY id LIMIT \(binds.add(Int64(max(0, filter.limit))))", binds.values
        )
        if filter.limit > 0, found.count == filter.limit, let last = found.last {
            var moreBinds = PostgresBinds()
            let more = Self.stateClauses(filter.states, &moreBinds) + ["id > \(moreBinds.add(last.id))"]
            var query = PostgresQuery(unsafeSQL: sql("SELECT EXISTS (SELECT 1 FROM §.entry WHERE \(more.joined(separator: " AND ")))"))
            do {
                for value in moreBinds.values { try query.binds.bind(value) }
            } catch {
                throw PostgresErrors.map(error, location: location)
            }
            let fixed = query
            let exists = try await reading { connection in
                try await connection.query(fixed, logger: self.logger).decodeAll(Bool.self).first ?? false
            }
            return EntryPage(entries: found, next: exists ? last.id : nil)
        }
        return EntryPage(entries: found, next: windowEnd)
    }

    /// The condition for `states` (none for every state: then a row of a state this version
    /// does not know is read, and is an error, rather than left out).
    static func stateClauses(_ states: Set<EntryState>, _ binds: inout PostgresBinds) -> [String] {
        guard !states.isEmpty else { return [] }
        return ["state = ANY(\(binds.add(states.map(\.rawValue).sorted())))"]
    }

    /// The conditions on `entry` (aliased `alias`) for a filter's group, name and origin.
    /// `conditions` in PostgreSQL's SQL, on rows aliased `alias`, their values added to
    /// `binds`; `fleet` is the fleet clock's reading an age is measured from.
    static func clauses(_ conditions: [EntryCondition], alias: String?, fleet: Double = 0, _ binds: inout PostgresBinds) -> [String] {
        let column = { (name: String) in alias.map { "\($0).\(name)" } ?? name }
        var clauses: [String] = []
        for condition in conditions {
            switch condition {
            case .group(let group): clauses.append("\(column("group_key")) = \(binds.add(group))")
            case .name(let name): clauses.append("\(column("name")) = \(binds.add(name))")
            case .origin(let origin):
                // ``EntryFilter/matches(origin:url:)``: the origin, then nothing, a path or a query.
                let (url, bound) = (column("url"), binds.add(origin))
                clauses.append("(\(url) = \(bound)::text OR starts_with(\(url), \(bound)::text || '/') OR starts_with(\(url), \(bound)::text || '?'))")
            case .lastStatus(let range):
                let (low, high) = (binds.add(Int32(clamping: range.lowerBound)), binds.add(Int32(clamping: range.upperBound)))
                clauses.append("\(column("last_status")) BETWEEN \(low) AND \(high)")
            case .olderThan(let age): clauses.append("COALESCE(\(column("finished_at")), \(column("created_at"))) <= \(binds.add(fleet - age.seconds))")
            case .urlPrefix(let prefix): clauses.append("starts_with(\(column("url")), \(binds.add(prefix)))")
            case .idAbove(let id): clauses.append("\(column("id")) > \(binds.add(id))")
            case .idAtMost(let id): clauses.append("\(column("id")) <= \(binds.add(id))")
            case .ids(let ids) where ids.count == 1: clauses.append("\(column("id")) = \(binds.add(ids[0]))")
            case .ids(let ids): clauses.append("\(column("id")) = ANY(\(binds.add(ids)))")
            case .idempotencyKey(let key): clauses.append("\(column("idempotency_key")) = \(binds.add(key))")
            case .finishedBefore(let cutoff):
                clauses.append("COALESCE(\(column("finished_at")), \(column("created_at"))) < \(binds.add(cutoff.timeIntervalSince1970))")
            case .seal(.clear): clauses.append("\(column("seal_key")) IS NULL")
            case .seal(.notUnder(let key)): clauses.append("\(column("seal_key")) IS NOT NULL AND \(column("seal_key")) <> \(binds.add(key))")
            }
        }
        return clauses
    }

    /// Entries by group, name and state among the newest `newest` (a backward walk of the
    /// primary key), the network waiters (their index), and the deliveries of the last
    /// minutes on the fleet's clock (the newest delivered rows, through the `(state, id)` index).
    func tally(newest: Int, now: QueueTime) async throws(QueueError) -> EntryTally {
        let fleet = try await fleetTime(now)
        return try await reading { connection in
            var tally = EntryTally()
            for try await (group, name, state, count, first) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT group_key, name, state, count(*), min(id) FROM (SELECT id, group_key, name, state FROM §.entry ORDER BY id DESC LIMIT $1) AS w
                GROUP BY group_key, name, state
                """)).with(Int64(max(0, newest))), logger: self.logger).decode((String?, String, String, Int64, Int64).self) {
                let key = EntryTally.Key(group: group, name: name, state: try UnknownStoredValue.state(state, id: first))
                tally.counts[key, default: 0] += Int(count)
                tally.examined += Int(count)
            }
            tally.waitingForNetwork = Int(try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT count(*) FROM §.entry WHERE state = 'pending' AND waiting_network
                """)), logger: self.logger).decodeAll(Int64.self).first ?? 0)
            for try await (minute, five) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT count(*) FILTER (WHERE finished_at >= $1), count(*) FILTER (WHERE finished_at >= $2) FROM (
                    SELECT finished_at FROM §.entry WHERE state = 'delivered' ORDER BY id DESC LIMIT $3) AS d
                """)).with(fleet - 60, fleet - 300, Int64(EntryTally.deliveryWindow)), logger: self.logger).decode((Int64, Int64).self) {
                tally.deliveredLastMinute = Int(minute)
                tally.deliveredLastFiveMinutes = Int(five)
            }
            return tally
        }
    }

    /// Entries read by a condition (and order) over ``PostgresEntryColumn``, their times on this
    /// host's clocks of `now`.
    func entries(
        at now: QueueTime, where condition: String, _ values: (any PostgresThrowingDynamicTypeEncodable & Sendable)?...
    ) async throws(QueueError) -> [QueueEntry] {
        try await entries(at: now, where: condition, values)
    }

    /// ``entries(at:where:_:)`` with the values in an array.
    func entries(
        at now: QueueTime, where condition: String, _ values: [(any PostgresThrowingDynamicTypeEncodable & Sendable)?]
    ) async throws(QueueError) -> [QueueEntry] {
        let fleet = try await fleetTime(now)
        var query = PostgresQuery(unsafeSQL: sql("SELECT \(PostgresEntryColumn.selection) FROM §.entry WHERE \(condition)"))
        do {
            for value in values { try query.binds.bind(value) }
        } catch {
            throw PostgresErrors.map(error, location: location)
        }
        let fixed = query
        return try await reading { connection in
            var found: [QueueEntry] = []
            for try await row in try await connection.query(fixed, logger: self.logger) {
                found.append(try Self.entry(row, fleet: fleet, at: now))
            }
            return found
        }
    }

    func counts(now: QueueTime) async throws(QueueError) -> QueueCounts {
        let fleet = try await fleetTime(now)
        let lockName = self.lockName
        return try await reading { connection in
            var counts = QueueCounts()
            // A state this version does not know is an error naming its first row.
            for try await (state, count, first) in try await connection.query(
                PostgresQuery(unsafeSQL: self.sql("SELECT state, count(*), min(id) FROM §.entry GROUP BY state")), logger: self.logger
            ).decode((String, Int64, Int64).self) {
                switch try UnknownStoredValue.state(state, id: first) {
                case .pending: counts.pending = Int(count)
                case .inflight: counts.inflight = Int(count)
                case .delivered: counts.delivered = Int(count)
                case .dead: counts.dead = Int(count)
                case .blocked: counts.blocked = Int(count)
                case .superseded: counts.superseded = Int(count)
                case .conflict: counts.conflict = Int(count)
                }
            }
            counts.oldestPendingCreatedAt = try await connection.query(
                // The lowest pending id from the state index first: ordered by id alone, the walk
                // read every older finished row (128 ms at 1,000,000 entries; now 2 ms).
                PostgresQuery(unsafeSQL: self.sql("SELECT created_at FROM §.entry WHERE id = (SELECT min(id) FROM §.entry WHERE state = 'pending')")),
                logger: self.logger
            ).decodeAll(Double.self).first.map(Date.init(timeIntervalSince1970:))
            // Pauses are few and mostly none: without one, no pending row is looked up in them
            // (at 1,000,000 entries the due count 695-941 ms -> 50-59 ms, the next due 757 -> 1.2 ms).
            let paused = try await connection.query(PostgresQuery(unsafeSQL: self.sql("SELECT EXISTS (SELECT 1 FROM §.pause)")), logger: self.logger)
                .decodeAll(Bool.self).first ?? true
            let notPaused = paused ? "AND NOT \(Self.paused("e"))" : ""
            // Shown on this host's wall clock: the wait left, from now.
            let due = try await connection.query(
                PostgresQuery(unsafeSQL: self.sql("SELECT min(e.next_attempt_at) FROM §.entry AS e WHERE e.state = 'pending' \(notPaused)")),
                logger: self.logger
            ).decodeAll(Double?.self).first ?? nil
            // On this host's boot clock: the wait left by the fleet's clock, from this reading.
            if let due {
                let next = now.uptime + (due - fleet)
                counts.nextDue = DueTime(boot: now.boot, uptime: next)
                counts.nextAttemptAt = now.wallTime(atUptime: next)
                if due <= fleet {
                    counts.due = Int(try await connection.query(try PostgresQuery(unsafeSQL: self.sql("""
                        SELECT count(*) FROM §.entry AS e WHERE e.state = 'pending' AND e.next_attempt_at <= $1 \(notPaused)
                        """)).with(fleet), logger: self.logger).decodeAll(Int64.self).first ?? 0)
                }
            }
            // Entries whose origin's flow holds them back are not due (FlowControl), counted apart.
            // Which origins hold is the claim's rule, in Swift (`OriginFlowBook`), read from the
            // rows: not a copy of it in SQL.
            if counts.due > 0, case let origins = try await self.heldOrigins(fleet: fleet, on: connection), !origins.isEmpty {
                let held = Int(try await connection.query(try PostgresQuery(unsafeSQL: self.sql("""
                    SELECT count(*) FROM §.entry AS e WHERE e.state = 'pending' AND e.next_attempt_at <= $1 \(notPaused)
                    AND §.origin_of(e.url) = ANY($2)
                    """)).with(fleet, origins), logger: self.logger).decodeAll(Int64.self).first ?? 0)
                counts.heldByFlow = min(held, counts.due)
                counts.due -= counts.heldByFlow
            }
            // The newest delivered entries hold the last delivery, unless delivered far out of order.
            let delivered = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT max(finished_at) FROM (SELECT finished_at FROM §.entry WHERE state = 'delivered' ORDER BY id DESC LIMIT 64) AS d
                """)), logger: self.logger).decodeAll(Double?.self).first ?? nil
            counts.lastDeliveredAt = delivered.map { now.wall.addingTimeInterval($0 - fleet) }
            if counts.inflight > 0 {
                for try await (owner, count, alive) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                    SELECT e.lease_owner, count(*), bool_or(\(Self.drainerLives)) FROM §.entry AS e
                    WHERE e.state = 'inflight' GROUP BY e.lease_owner
                    """)).with(lockName), logger: self.logger).decode((String?, Int64, Bool?).self) {
                    if alive == true, let owner {
                        counts.drainers.append(owner)
                        if owner == self.owner { counts.inflightHere += Int(count) }
                    } else {
                        counts.inflightOrphaned += Int(count)
                    }
                }
            }
            return counts
        }
    }

    // MARK: - Upkeep

    /// A delivered entry whose response a child not yet sent takes values from
    /// (``ResponseReference``) stays until that child is sent. Each batch takes the oldest
    /// finished rows through `entry_finished` (migration v12), so it reads the rows it deletes.
    func deleteDeliveredEntries(finishedBefore cutoff: Date) async throws(QueueError) -> RetentionSummary {
        var summary = RetentionSummary()
        let batch = 500
        while true {
            let references = try await transaction { connection -> [String?] in
                let rows = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                    DELETE FROM §.entry WHERE id IN (
                        SELECT e.id FROM §.entry AS e WHERE e.state IN ('delivered', 'superseded') AND e.finished_at < $1
                            AND NOT EXISTS (SELECT 1 FROM §.entry_edge AS g JOIN §.entry AS c ON c.id = g.child
                                WHERE g.parent = e.id AND c.state IN ('blocked', 'pending', 'inflight') AND c.response_sources IS NOT NULL
                                AND ',' || split_part(c.response_sources, ' ', 1) || ',' LIKE '%,' || e.id || ',%')
                        ORDER BY e.finished_at LIMIT $2)
                    RETURNING body_ref
                    """)).with(cutoff.timeIntervalSince1970, Int64(batch)), logger: self.logger).decodeAll(String?.self)
                let names = rows.compactMap { $0 }
                if !names.isEmpty {
                    try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.body WHERE ref = ANY($1)")).with(names), logger: self.logger)
                }
                return rows
            }
            summary.deletedEntries += references.count
            summary.deletedBodyFiles += references.compactMap { $0 }.count
            if references.count < batch { return summary }
        }
    }
}
