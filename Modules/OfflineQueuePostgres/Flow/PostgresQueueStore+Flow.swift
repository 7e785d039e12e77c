import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// Flow control by origin (``FlowControl``): what an operator sees and changes, and the limits
/// a drainer stores. The claim's side is in `settle_and_claim` (PostgresSchema+Flow.swift).
extension PostgresQueueStore {
    /// Rows that hold nothing any more (no pause in force at `$1`, nothing shrunk, no limit, no
    /// circuit, failures or threshold).
    static let idleFlows = """
        (paused_until IS NULL OR paused_until <= $1) AND shrunk_to IS NULL AND rate IS NULL AND cap IS NULL
            AND open_after IS NULL AND failures = 0 AND open_until IS NULL
        """

    /// The flow rows as the store-neutral rules read them (times are the fleet's).
    func flowRows(on connection: PostgresConnection) async throws -> [OriginFlow] {
        var rows: [OriginFlow] = []
        for try await result in try await connection.query(PostgresQuery(unsafeSQL: sql("""
            SELECT origin, paused_until, pause_status, shrunk_to, successes, rate, burst, cap, tokens, refilled_at,
                open_after, failures, last_failure, open_until, probe_wait, opened_at
            FROM §.origin_flow ORDER BY origin COLLATE "C"
            """)), logger: logger) {
            let cells = result.makeRandomAccess()
            var row = OriginFlow(origin: try cells[0].decode(String.self))
            row.pausedUntil = try cells[1].decode(Double?.self)
            row.pausedUntilWall = row.pausedUntil
            row.pauseStatus = try cells[2].decode(Int32?.self).map(Int.init)
            row.window = try cells[3].decode(Int32?.self).map(Int.init)
            row.successes = Int(try cells[4].decode(Int32.self))
            row.rate = try cells[5].decode(Double?.self)
            row.burst = try cells[6].decode(Int32?.self).map(Int.init)
            row.cap = try cells[7].decode(Int32?.self).map(Int.init)
            row.tokens = try cells[8].decode(Double.self)
            row.refilledAt = try cells[9].decode(Double.self)
            row.openAfter = try cells[10].decode(Int32?.self).map(Int.init)
            row.failures = Int(try cells[11].decode(Int32.self))
            row.lastFailure = try cells[12].decode(String?.self)
            row.openUntil = try cells[13].decode(Double?.self)
            row.openUntilWall = row.openUntil
            row.probeWait = try cells[14].decode(Double?.self)
            row.openedAt = try cells[15].decode(Double?.self)
            rows.append(row)
        }
        return rows
    }

    /// Entries in flight by origin, in every drainer.
    func inflightByOrigin(on connection: PostgresConnection) async throws -> [Substring: Int] {
        var inflight: [Substring: Int] = [:]
        for try await (origin, count) in try await connection.query(PostgresQuery(unsafeSQL: sql("""
            SELECT §.origin_of(url), count(*) FROM §.entry WHERE state = 'inflight' GROUP BY 1
            """)), logger: logger).decode((String?, Int64).self) {
            if let origin { inflight[origin[...]] = Int(count) }
        }
        return inflight
    }

    /// The origins whose flow lets them take nothing at `fleet` (paused, out of tokens, at
    /// their concurrency, or with an open circuit), by ``OriginFlowBook``'s rule, the claim's,
    /// read from the rows.
    func heldOrigins(fleet: Double, on connection: PostgresConnection) async throws -> [String] {
        let rows = try await flowRows(on: connection)
        guard !rows.isEmpty else { return [] }
        return OriginFlowBook(rows, inflight: try await inflightByOrigin(on: connection), now: fleet).heldOrigins.sorted()
    }

    /// Stores `limits` as the queue's: each origin's and pattern's row, then the rows patterns
    /// gave origins (``OriginLimitTable``: their pattern's limit now, or none), in one
    /// transaction; nothing when the rows already hold them.
    func writeOriginLimits(_ limits: [FlowControl.OriginLimit], now: QueueTime) async throws(QueueError) {
        let fleet = try await fleetTime(now)
        let table = OriginLimitTable(limits)
        let stored = try await reading { connection in
            var stored: [String: FlowControl.OriginLimit?] = [:]
            for try await (origin, rate, burst, cap, openAfter) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT origin, rate, burst, cap, open_after FROM §.origin_flow
                """)), logger: self.logger).decode((String, Double?, Int32?, Int32?, Int32?).self) {
                stored[origin] = rate == nil && cap == nil && openAfter == nil
                    ? .some(nil)
                    : try? FlowControl.OriginLimit(
                        origin, requestsPerSecond: rate, burst: Int(burst ?? 1), concurrency: cap.map(Int.init), openAfter: openAfter.map(Int.init)
                    )
            }
            return stored
        }
        guard !table.agrees(with: stored) else { return }
        let named = limits.map(\.origin)
        // An origin named twice takes its last limit, as OriginLimitTable keeps them (a second
        // upsert would keep the first one's tokens: found by the model check, a bucket of 1
        // where every other store started the last limit's 3).
        var last: [String: FlowControl.OriginLimit] = [:]
        for limit in limits { last[limit.origin] = limit }
        let distinct = last.values.sorted { $0.origin < $1.origin }
        try await transaction { connection in
            for limit in distinct {
                // A new bucket starts full; one that existed keeps its tokens (at most the new burst).
                try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                    INSERT INTO §.origin_flow AS f (origin, rate, burst, cap, tokens, refilled_at, open_after) VALUES ($1, $2, $3, $4, $3, $5, $6)
                    ON CONFLICT (origin) DO UPDATE SET
                        tokens = CASE WHEN f.rate IS NULL THEN EXCLUDED.tokens ELSE least(f.tokens, EXCLUDED.burst) END,
                        refilled_at = CASE WHEN f.rate IS NULL THEN EXCLUDED.refilled_at ELSE f.refilled_at END,
                        rate = EXCLUDED.rate, burst = EXCLUDED.burst, cap = EXCLUDED.cap, open_after = EXCLUDED.open_after
                    """)).with(
                        limit.origin, limit.requestsPerSecond, Int32(clamping: limit.burst), limit.concurrency.map { Int32(clamping: $0) }, fleet,
                        limit.openAfter.map { Int32(clamping: $0) }
                    ), logger: self.logger)
            }
            // Patterns no longer named hold nothing; then every other row holds its pattern's
            // limit as it is now, or none.
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.origin_flow SET rate = NULL, burst = NULL, cap = NULL, open_after = NULL WHERE position('*' in origin) > 0 AND NOT origin = ANY($1)
                """)).with(named), logger: self.logger)
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.origin_flow AS f SET rate = p.rate, burst = p.burst, cap = p.cap, open_after = p.open_after,
                    tokens = CASE WHEN f.rate IS NULL AND p.rate IS NOT NULL THEN p.burst
                        WHEN p.burst IS NOT NULL THEN least(f.tokens, p.burst) ELSE f.tokens END,
                    refilled_at = CASE WHEN f.rate IS NULL AND p.rate IS NOT NULL THEN $2 ELSE f.refilled_at END
                FROM (SELECT g.origin AS of, d.rate, d.burst, d.cap, d.open_after FROM §.origin_flow AS g CROSS JOIN LATERAL §.pattern_for(g.origin) AS d
                    WHERE position('*' in g.origin) = 0 AND NOT g.origin = ANY($1)) AS p
                WHERE f.origin = p.of
                """)).with(named, fleet), logger: self.logger)
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.origin_flow WHERE \(Self.idleFlows)")).with(fleet), logger: self.logger)
            try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger)
        }
    }

    func readOriginFlows(now: QueueTime) async throws(QueueError) -> [FlowControl.OriginStatus] {
        let fleet = try await fleetTime(now)
        return try await reading { connection in
            let rows = try await self.flowRows(on: connection)
            guard !rows.isEmpty else { return [] }
            let inflight = try await self.inflightByOrigin(on: connection)
            // A row whose pause has passed, with nothing else, holds nothing: not shown (the
            // next claim deletes it), as on every store.
            return rows.filter { !$0.isIdle(at: fleet) }.map { row in
                row.status(at: fleet, inflight: inflight[row.origin[...], default: 0]) { now.wall.addingTimeInterval($0 - fleet) }
            }
        }
    }

    /// A resume wakes every drainer, as an enqueue does.
    func resumeOriginFlow(origin: String, now: QueueTime) async throws(QueueError) -> Bool {
        let fleet = try await fleetTime(now)
        return try await transaction { connection in
            // What OriginFlow.resume lifts: the pause, the shrunk window, the open circuit.
            let wasOpen = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT open_until IS NOT NULL FROM §.origin_flow WHERE origin = $1 FOR UPDATE
                """)).with(origin), logger: self.logger).decodeAll(Bool.self).first ?? false
            let lifted = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.origin_flow SET paused_until = NULL, pause_status = NULL, shrunk_to = NULL, successes = 0,
                    failures = 0, last_failure = NULL, open_until = NULL, probe_wait = NULL, opened_at = NULL
                WHERE origin = $1 AND (paused_until > $2 OR shrunk_to IS NOT NULL OR open_until IS NOT NULL) RETURNING origin
                """)).with(origin, fleet), logger: self.logger).decodeAll(String.self)
            // A circuit closed: the origin's entries are due at once, as when a probe is delivered.
            if wasOpen && !lifted.isEmpty {
                try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                    UPDATE §.entry SET next_attempt_at = $2 WHERE state = 'pending' AND next_attempt_at > $2 AND §.origin_of(url) = $1
                    """)).with(origin, fleet), logger: self.logger)
            }
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.origin_flow WHERE \(Self.idleFlows)")).with(fleet), logger: self.logger)
            if !lifted.isEmpty { try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger) }
            return !lifted.isEmpty
        }
    }
}
