import Foundation
import GRDB
import HTTPCore

/// Flow control by origin (``FlowControl``), in the table `origin_flow` (schema 15): a row only
/// for an origin paused, shrunk or limited, so a queue without any claims as before, one
/// `EXISTS` more per claim. The rows are read, and the buckets debited, in the transaction
/// that claims: SQLite's one writer at a time serialises the drainers of every process.
///
/// Times are readings of the boot clock, as the entries' are; a row of another boot is carried
/// over by its wall times (a pause keeps what is left of it; a bucket starts from its tokens).
extension SQLiteQueueStore {
    /// Whether any origin's flow is held: the claim's one check when none is.
    static func hasFlowRows(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM origin_flow)")) ?? false
    }

    /// The flow rows, carried over to this boot. `health`: the file has the circuits' columns
    /// (schema 18; an older file is read as it is when opened read-only).
    static func flowRows(_ db: Database, now: QueueTime, health: Bool = true) throws -> [OriginFlow] {
        let circuits = health ? ", open_after, failures, last_failure, open_until, open_until_wall, probe_wait, opened_at" : ""
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT origin, paused_until, paused_until_wall, pause_status, boot, shrunk_to, successes, rate, burst, cap, tokens, refilled_at\(circuits)
            FROM origin_flow
            """))
        return rows.map { row in
            var flow = OriginFlow(origin: row[0])
            let sameBoot = (row[4] as String?) == now.boot
            let wall = now.wall.timeIntervalSince1970
            flow.pausedUntilWall = row[2]
            flow.pausedUntil = sameBoot ? row[1] : flow.pausedUntilWall.map { now.uptime + max(0, $0 - wall) }
            flow.pauseStatus = row[3]
            flow.window = row[5]
            flow.successes = row[6]
            flow.rate = row[7]
            flow.burst = row[8]
            flow.cap = row[9]
            flow.tokens = row[10]
            flow.refilledAt = sameBoot ? row[11] : now.uptime
            guard health else { return flow }
            flow.openAfter = row[12]
            flow.failures = row[13]
            flow.lastFailure = row[14]
            // A probe's time carried over a reboot as the pause's is: what was left by the wall clock.
            flow.openUntilWall = row[16]
            flow.openUntil = sameBoot ? row[15] : flow.openUntilWall.map { now.uptime + max(0, $0 - wall) }
            flow.probeWait = row[17]
            flow.openedAt = row[18]
            return flow
        }
    }

    /// Writes `rows` (each whole, on this boot's clock) and deletes the rows of `idle`.
    static func writeFlows(_ db: Database, _ rows: [OriginFlow], idle: [String], now: QueueTime) throws {
        let upsert = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO origin_flow
                (origin, paused_until, paused_until_wall, pause_status, boot, shrunk_to, successes, rate, burst, cap, tokens, refilled_at,
                 open_after, failures, last_failure, open_until, open_until_wall, probe_wait, opened_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for row in rows {
            try upsert.execute(arguments: [
                row.origin, row.pausedUntil, row.pausedUntilWall, row.pauseStatus, now.boot, row.window, row.successes,
                row.rate, row.burst, row.cap, row.tokens, row.refilledAt,
                row.openAfter, row.failures, row.lastFailure, row.openUntil, row.openUntilWall, row.probeWait, row.openedAt,
            ])
        }
        let delete = try db.cachedStatement(sql: "DELETE FROM origin_flow WHERE origin = ?")
        for origin in idle { try delete.execute(arguments: [origin]) }
    }

    /// Entries in flight by origin, in every drainer (the leases: few).
    static func inflightByOrigin(_ db: Database) throws -> [Substring: Int] {
        var counts: [Substring: Int] = [:]
        let urls = try String.fetchCursor(db.cachedStatement(sql: "SELECT e.url FROM lease JOIN entry AS e ON e.id = lease.entry_id"))
        while let url = try urls.next() {
            if let origin = FlowOrigin.key(ofURL: url) { counts[origin, default: 0] += 1 }
        }
        return counts
    }

    /// What `settlements` (those of claims `owner` holds) say of their origins, recorded before
    /// the settlements themselves (so an overload counts the entry that met it among those in
    /// flight). Deliveries are read only when a row exists to count them.
    /// Returns the origins whose circuit the settlements opened and closed; every pending entry
    /// of one closed is due at once.
    @discardableResult
    static func recordFlow(
        _ db: Database, _ settlements: [Settlement], owner: String, now: QueueTime, settings: FlowSettings
    ) throws -> (opened: [String], closed: [String]) {
        // Pauses, overloads and failures make rows; deliveries count only towards rows that exist.
        let signals = settlements.contains { settlement in
            switch settlement.flowSignal {
            case .pause?, .overload?, .unwell?: true
            case .success?, nil: false
            }
        }
        guard try signals || hasFlowRows(db) else { return ([], []) }
        var flows = Dictionary(try flowRows(db, now: now).map { ($0.origin, $0) }, uniquingKeysWith: { first, _ in first })
        let held = try Set(EntryID.fetchAll(
            db.cachedStatement(sql: "SELECT entry_id FROM lease WHERE owner = ? AND entry_id IN (SELECT value FROM json_each(?))"),
            arguments: [owner, list(settlements.map(\.id))]
        ))
        var inflight: [Substring: Int]?
        var changed: Set<String> = []
        var opened: [String] = []
        var closed: [String] = []
        for settlement in settlements where held.contains(settlement.id) {
            guard let signal = settlement.flowSignal, let url = settlement.url, let origin = FlowOrigin.key(ofURL: url) else { continue }
            let key = String(origin)
            if case .success = signal, flows[key] == nil { continue }
            if case .overload = signal, inflight == nil { inflight = try inflightByOrigin(db) }
            var row = flows[key] ?? OriginFlow(origin: key, patterns: OriginLimitTable(rows: Array(flows.values)), now: now.uptime)
            switch row.record(signal, now: now.uptime, wall: now.wall.timeIntervalSince1970, inflight: inflight?[origin] ?? 1, settings: settings, jitter: settlement.jitter) {
            case .opened?: opened.append(key)
            case .closed?: closed.append(key)
            case nil: break
            }
            flows[key] = row
            changed.insert(key)
        }
        try writeFlows(db, changed.compactMap { flows[$0] }, idle: [], now: now)
        for origin in closed { try makeDue(db, origin: origin, now: now) }
        return (opened, closed)
    }

    /// Every pending entry of `origin` due now, not in flight: its circuit closed. (No index
    /// finds an origin's entries: once per recovery, it reads the pending ones.)
    static func makeDue(_ db: Database, origin: String, now: QueueTime) throws {
        try markBoot(db, now.boot)
        try db.cachedStatement(sql: """
            UPDATE entry INDEXED BY entry_pending SET due_uptime = :uptime, next_attempt_at = :wall,
                budget_uptime = CASE WHEN clock_boot = :boot THEN budget_uptime ELSE :uptime - MAX(0, :wall - budget_from) END,
                attempt_uptime = CASE WHEN clock_boot = :boot THEN attempt_uptime END, clock_boot = :boot
            WHERE state = 'pending' AND (url = :origin OR substr(url, 1, length(:origin) + 1) IN (:origin || '/', :origin || '?', :origin || '#'))
                AND NOT EXISTS (SELECT 1 FROM lease WHERE lease.entry_id = entry.id)
                AND (due_uptime > :uptime OR clock_boot IS NOT :boot)
            """).execute(arguments: ["uptime": now.uptime, "wall": now.wall.timeIntervalSince1970, "boot": now.boot, "origin": origin])
    }

    func writeOriginLimits(_ limits: [FlowControl.OriginLimit], now: QueueTime) async throws(QueueError) {
        let table = OriginLimitTable(limits)
        let stored = try await read { db in
            Dictionary(try Self.flowRows(db, now: now).map { ($0.origin, $0.limit) }, uniquingKeysWith: { first, _ in first })
        }
        guard !table.agrees(with: stored) else { return }
        try await write { db in
            var rows = Dictionary(try Self.flowRows(db, now: now).map { ($0.origin, $0) }, uniquingKeysWith: { first, _ in first })
            for origin in Set(rows.keys).union(limits.map(\.origin)) {
                var row = rows[origin] ?? OriginFlow(origin: origin)
                row.set(table.limit(for: origin), now: now.uptime)
                rows[origin] = row
            }
            let idle = rows.values.filter { $0.isIdle(at: now.uptime) }.map(\.origin)
            try Self.writeFlows(db, rows.values.filter { !$0.isIdle(at: now.uptime) }, idle: idle, now: now)
        }
        ringWake()
    }

    func readOriginFlows(now: QueueTime) async throws(QueueError) -> [FlowControl.OriginStatus] {
        guard schemaVersion >= Schema.firstFlowVersion else { return [] }
        return try await read { db in
            let inflight = try Self.inflightByOrigin(db)
            // A row whose pause has passed, with nothing else, holds nothing: not shown (the next
            // claim deletes it).
            let health = self.schemaVersion >= Schema.firstHealthVersion
            return try Self.flowRows(db, now: now, health: health).filter { !$0.isIdle(at: now.uptime) }.sorted { $0.origin < $1.origin }.map { row in
                row.status(at: now.uptime, inflight: inflight[row.origin[...], default: 0]) { now.wallTime(atUptime: $0) }
            }
        }
    }

    /// Records what `settlements` say of their origins, then the settlements (as
    /// ``settleAndClaim(_:now:claimLimit:lease:attemptedSince:chores:)`` does, claiming nothing).
    func settleRecordingFlow(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        guard !settlements.isEmpty else { return [] }
        let owner = self.owner
        defer { if settlements.contains(where: \.ends) { ringSettled() } }
        return try await write { db in
            try Self.recordFlow(db, settlements, owner: owner, now: now, settings: FlowSettings())
            return try Self.settle(db, settlements, owner: owner, now: now)
        }
    }

    func resumeOriginFlow(origin: String, now: QueueTime) async throws(QueueError) -> Bool {
        guard schemaVersion >= Schema.firstFlowVersion else { return false }
        let lifted = try await write { db in
            guard var row = try Self.flowRows(db, now: now).first(where: { $0.origin == origin }),
                  row.isPaused(at: now.uptime) || row.window != nil || row.isOpen else { return false }
            let wasOpen = row.isOpen
            row.resume()
            let idle = row.isIdle(at: now.uptime)
            try Self.writeFlows(db, idle ? [] : [row], idle: idle ? [origin] : [], now: now)
            if wasOpen { try Self.makeDue(db, origin: origin, now: now) }
            return true
        }
        if lifted { ringWake() }
        return lifted
    }
}
