import Foundation
import HTTPCore
import OfflineQueueCore
import PostgresNIO

/// Flow control by origin (``FlowControl``): what an operator sees and changes, and the limits
/// a drainer stores. The claim's side is in `settle_and_claim` (PostgresSchema+Flow.swift).
extension PostgresQueueStore {
    /// Rows that hold nothing any more (no pause in force at `$1`, nothing shrunk, no limit).
    static let idleFlows = "(paused_until IS NULL OR paused_until <= $1) AND shrunk_to IS NULL AND rate IS NULL AND cap IS NULL"

    /// The origins whose flow lets them take nothing at `fleet` (paused, out of tokens, or at
    /// their concurrency), by ``OriginFlowBook``'s rule, the claim's, read from the rows.
    func heldOrigins(fleet: Double, on connection: PostgresConnection) async throws -> [String] {
        var rows: [OriginFlow] = []
        for try await (origin, pausedUntil, shrunk, successes, rate, burst, cap, tokens, refilled) in try await connection.query(
            PostgresQuery(unsafeSQL: sql("""
                SELECT origin, paused_until, shrunk_to, successes, rate, burst, cap, tokens, refilled_at FROM §.origin_flow
                """)), logger: logger
        ).decode((String, Double?, Int32?, Int32, Double?, Int32?, Int32?, Double, Double).self) {
            var row = OriginFlow(origin: origin)
            row.pausedUntil = pausedUntil
            row.window = shrunk.map(Int.init)
            row.successes = Int(successes)
            row.rate = rate
            row.burst = burst.map(Int.init)
            row.cap = cap.map(Int.init)
            row.tokens = tokens
            row.refilledAt = refilled
            rows.append(row)
        }
        guard !rows.isEmpty else { return [] }
        var inflight: [Substring: Int] = [:]
        for try await (origin, count) in try await connection.query(PostgresQuery(unsafeSQL: sql("""
            SELECT §.origin_of(url), count(*) FROM §.entry WHERE state = 'inflight' GROUP BY 1
            """)), logger: logger).decode((String?, Int64).self) {
            if let origin { inflight[origin[...]] = Int(count) }
        }
        return OriginFlowBook(rows, inflight: inflight, now: fleet).heldOrigins.sorted()
    }

    /// Stores `limits` as the queue's: each origin's and pattern's row, then the rows patterns
    /// gave origins (``OriginLimitTable``: their pattern's limit now, or none), in one
    /// transaction; nothing when the rows already hold them.
    func storeOriginLimits(_ limits: [OriginLimit], now: QueueTime) async throws(QueueError) {
        let fleet = try await fleetTime(now)
        let table = OriginLimitTable(limits)
        let stored = try await reading { connection in
            var stored: [String: OriginLimit?] = [:]
            for try await (origin, rate, burst, cap) in try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT origin, rate, burst, cap FROM §.origin_flow
                """)), logger: self.logger).decode((String, Double?, Int32?, Int32?).self) {
                stored[origin] = rate == nil && cap == nil
                    ? .some(nil) : try? OriginLimit(origin, requestsPerSecond: rate, burst: Int(burst ?? 1), concurrency: cap.map(Int.init))
            }
            return stored
        }
        guard !table.agrees(with: stored) else { return }
        let named = limits.map(\.origin)
        // An origin named twice takes its last limit, as OriginLimitTable keeps them (a second
        // upsert would keep the first one's tokens: found by the model check, a bucket of 1
        // where every other store started the last limit's 3).
        var last: [String: OriginLimit] = [:]
        for limit in limits { last[limit.origin] = limit }
        let distinct = last.values.sorted { $0.origin < $1.origin }
        try await transaction { connection in
            for limit in distinct {
                // A new bucket starts full; one that existed keeps its tokens (at most the new burst).
                try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                    INSERT INTO §.origin_flow AS f (origin, rate, burst, cap, tokens, refilled_at) VALUES ($1, $2, $3, $4, $3, $5)
                    ON CONFLICT (origin) DO UPDATE SET
                        tokens = CASE WHEN f.rate IS NULL THEN EXCLUDED.tokens ELSE least(f.tokens, EXCLUDED.burst) END,
                        refilled_at = CASE WHEN f.rate IS NULL THEN EXCLUDED.refilled_at ELSE f.refilled_at END,
                        rate = EXCLUDED.rate, burst = EXCLUDED.burst, cap = EXCLUDED.cap
                    """)).with(
                        limit.origin, limit.requestsPerSecond, Int32(clamping: limit.burst), limit.concurrency.map { Int32(clamping: $0) }, fleet
                    ), logger: self.logger)
            }
            // Patterns no longer named hold nothing; then every other row holds its pattern's
            // limit as it is now, or none.
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.origin_flow SET rate = NULL, burst = NULL, cap = NULL WHERE position('*' in origin) > 0 AND NOT origin = ANY($1)
                """)).with(named), logger: self.logger)
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.origin_flow AS f SET rate = p.rate, burst = p.burst, cap = p.cap,
                    tokens = CASE WHEN f.rate IS NULL AND p.rate IS NOT NULL THEN p.burst
                        WHEN p.burst IS NOT NULL THEN least(f.tokens, p.burst) ELSE f.tokens END,
                    refilled_at = CASE WHEN f.rate IS NULL AND p.rate IS NOT NULL THEN $2 ELSE f.refilled_at END
                FROM (SELECT g.origin AS of, d.rate, d.burst, d.cap FROM §.origin_flow AS g CROSS JOIN LATERAL §.pattern_for(g.origin) AS d
                    WHERE position('*' in g.origin) = 0 AND NOT g.origin = ANY($1)) AS p
                WHERE f.origin = p.of
                """)).with(named, fleet), logger: self.logger)
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.origin_flow WHERE \(Self.idleFlows)")).with(fleet), logger: self.logger)
            try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger)
        }
    }

    func originFlows(now: QueueTime) async throws(QueueError) -> [OriginFlowStatus] {
        let fleet = try await fleetTime(now)
        return try await reading { connection in
            var flows: [OriginFlowStatus] = []
            let rows = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                SELECT f.origin, f.paused_until, f.pause_status, f.shrunk_to, f.rate, f.burst, f.cap,
                    (SELECT count(*) FROM §.entry AS i WHERE i.state = 'inflight' AND §.origin_of(i.url) = f.origin)
                FROM §.origin_flow AS f ORDER BY f.origin COLLATE "C"
                """)), logger: self.logger)
            for try await (origin, pausedUntil, status, shrunk, rate, burst, cap, inflight) in rows.decode(
                (String, Double?, Int32?, Int32?, Double?, Int32?, Int32?, Int64).self
            ) {
                let paused = pausedUntil.map { $0 > fleet } ?? false
                let limit = rate != nil || cap != nil
                    ? try? OriginLimit(origin, requestsPerSecond: rate, burst: Int(burst ?? 1), concurrency: cap.map(Int.init)) : nil
                // A row whose pause has passed, with nothing else, holds nothing: not shown (the
                // next claim deletes it), as on every store.
                guard paused || shrunk != nil || limit != nil else { continue }
                flows.append(OriginFlowStatus(
                    origin: origin, pausedUntil: paused ? pausedUntil.map { now.wall.addingTimeInterval($0 - fleet) } : nil,
                    pauseStatus: paused ? status.map(Int.init) : nil, concurrency: shrunk.map(Int.init), limit: limit, inflight: Int(inflight)
                ))
            }
            return flows
        }
    }

    /// A resume wakes every drainer, as an enqueue does.
    func resume(origin: String, now: QueueTime) async throws(QueueError) -> Bool {
        let fleet = try await fleetTime(now)
        return try await transaction { connection in
            let lifted = try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                UPDATE §.origin_flow SET paused_until = NULL, pause_status = NULL, shrunk_to = NULL, successes = 0
                WHERE origin = $1 AND (paused_until > $2 OR shrunk_to IS NOT NULL) RETURNING origin
                """)).with(origin, fleet), logger: self.logger).decodeAll(String.self)
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("DELETE FROM §.origin_flow WHERE \(Self.idleFlows)")).with(fleet), logger: self.logger)
            if !lifted.isEmpty { try await connection.query("SELECT pg_notify(\(self.channel), '')", logger: self.logger) }
            return !lifted.isEmpty
        }
    }
}
