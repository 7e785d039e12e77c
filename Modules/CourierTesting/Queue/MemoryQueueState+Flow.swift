import Foundation
import HTTPCore
import OfflineQueueCore

/// Flow control by origin (``FlowControl``): the rows the other stores keep in a table, by origin.
extension MemoryQueueState {
    /// Entries in flight by origin.
    func inflightByOrigin() -> [Substring: Int] {
        var counts: [Substring: Int] = [:]
        for row in rows.values where row.entry.state == .inflight {
            if let origin = FlowOrigin.key(ofURL: row.entry.url) { counts[origin, default: 0] += 1 }
        }
        return counts
    }

    /// What the settlements' answers say of their origins, before they are recorded (so an
    /// overload counts the entry that met it among those in flight). Only those of claims
    /// `owner` holds count.
    mutating func recordFlow(_ settlements: [Settlement], owner: String, now: QueueTime, settings: FlowSettings) {
        var inflight: [Substring: Int]?
        for settlement in settlements where rows[settlement.id]?.entry.leaseOwner == owner {
            guard let signal = settlement.flowSignal, let url = settlement.url, let origin = FlowOrigin.key(ofURL: url) else { continue }
            if case .success = signal, flows[String(origin)] == nil { continue }
            if case .overload = signal, inflight == nil { inflight = inflightByOrigin() }
            var row = flows[String(origin)]
                ?? OriginFlow(origin: String(origin), patterns: OriginLimitTable(rows: Array(flows.values)), now: now.uptime)
            row.record(signal, now: now.uptime, wall: now.wall.timeIntervalSince1970, inflight: inflight?[origin] ?? 1, settings: settings)
            flows[row.origin] = row
        }
    }

    /// The book a claim consults, `nil` when no row can hold anything.
    func flowBook(now: QueueTime) -> OriginFlowBook? {
        guard !flows.isEmpty else { return nil }
        return OriginFlowBook(Array(flows.values), inflight: inflightByOrigin(), now: now.uptime)
    }

    /// The first `limit` of `candidates` (in claim order) that their origins' flows admit, the
    /// flows written back as the claim leaves them.
    mutating func admitted(
        _ candidates: [Row], limit: Int, now: QueueTime, heldFor: inout Duration?, pausedOrigins: inout [String]
    ) -> [Row] {
        guard var book = flowBook(now: now) else { return Array(candidates.prefix(limit)) }
        var chosen: [Row] = []
        for candidate in candidates where chosen.count < limit {
            if book.admit(url: candidate.entry.url) { chosen.append(candidate) }
        }
        write(book)
        heldFor = book.heldFor
        pausedOrigins = book.pausedOrigins
        return chosen
    }

    /// Writes back what a claim took.
    mutating func write(_ book: OriginFlowBook) {
        let (changed, idle) = book.written()
        for row in changed { flows[row.origin] = row }
        for origin in idle { flows[origin] = nil }
    }

    /// Returns whether the stored limits changed.
    mutating func storeOriginLimits(_ limits: [OriginLimit], now: QueueTime) -> Bool {
        let table = OriginLimitTable(limits)
        guard !table.agrees(with: flows.mapValues(\.limit)) else { return false }
        for origin in Set(flows.keys).union(limits.map(\.origin)) {
            var row = flows[origin] ?? OriginFlow(origin: origin)
            row.set(table.limit(for: origin), now: now.uptime)
            flows[origin] = row.isIdle(at: now.uptime) ? nil : row
        }
        return true
    }

    func originFlows(now: QueueTime) -> [OriginFlowStatus] {
        let inflight = inflightByOrigin()
        return flows.values.filter { !$0.isIdle(at: now.uptime) }.sorted { $0.origin < $1.origin }.map { row in
            OriginFlowStatus(
                origin: row.origin,
                pausedUntil: row.isPaused(at: now.uptime) ? row.pausedUntil.map { now.wallTime(atUptime: $0) } : nil,
                pauseStatus: row.isPaused(at: now.uptime) ? row.pauseStatus : nil,
                concurrency: row.window, limit: row.limit, inflight: inflight[row.origin[...], default: 0]
            )
        }
    }

    mutating func resume(origin: String, now: QueueTime) -> Bool {
        guard var row = flows[origin], row.isPaused(at: now.uptime) || row.window != nil else { return false }
        row.pausedUntil = nil
        row.pauseStatus = nil
        row.window = nil
        row.successes = 0
        flows[origin] = row.isIdle(at: now.uptime) ? nil : row
        return true
    }
}
