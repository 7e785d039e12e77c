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
    /// Returns the origins whose circuit the settlements opened and closed; the entries of one
    /// closed are due at once.
    @discardableResult
    mutating func recordFlow(_ settlements: [Settlement], owner: String, now: QueueTime, settings: FlowSettings) -> (opened: [String], closed: [String]) {
        var inflight: [Substring: Int]?
        var opened: [String] = []
        var closed: [String] = []
        for settlement in settlements where rows[settlement.id]?.entry.leaseOwner == owner {
            guard let signal = settlement.flowSignal, let url = settlement.url, let origin = FlowOrigin.key(ofURL: url) else { continue }
            if case .success = signal, flows[String(origin)] == nil { continue }
            if case .overload = signal, inflight == nil { inflight = inflightByOrigin() }
            var row = flows[String(origin)]
                ?? OriginFlow(origin: String(origin), patterns: OriginLimitTable(rows: Array(flows.values)), now: now.uptime)
            switch row.record(signal, now: now.uptime, wall: now.wall.timeIntervalSince1970, inflight: inflight?[origin] ?? 1, settings: settings, jitter: settlement.jitter) {
            case .opened?: opened.append(row.origin)
            case .closed?: closed.append(row.origin)
            case nil: break
            }
            flows[row.origin] = row
        }
        for origin in closed { makeDue(origin: origin, now: now) }
        return (opened, closed)
    }

    /// Every pending entry of `origin` due now: its circuit closed.
    mutating func makeDue(origin: String, now: QueueTime) {
        for (id, row) in rows where row.entry.state == .pending && row.due > now.uptime && FlowOrigin.key(ofURL: row.entry.url) == origin[...] {
            rows[id]?.due = now.uptime
            rows[id]?.entry.nextAttemptAt = now.wall
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
        _ candidates: [Row], limit: Int, now: QueueTime, result: inout ClaimResult
    ) -> [Row] {
        guard var book = flowBook(now: now) else { return Array(candidates.prefix(limit)) }
        var chosen: [Row] = []
        let open = Set(book.openOrigins)
        // Each open circuit's probe first: the first of its origin's entries in claim order.
        for origin in book.probingOrigins where chosen.count < limit {
            guard let candidate = candidates.first(where: { FlowOrigin.key(ofURL: $0.entry.url) == origin[...] }) else { continue }
            if book.admission(url: candidate.entry.url) == .probe {
                chosen.append(candidate)
                result.probes.insert(candidate.entry.id)
            }
        }
        // Then the others, an open circuit's entries never walked.
        for candidate in candidates where chosen.count < limit {
            if !open.isEmpty, let origin = FlowOrigin.key(ofURL: candidate.entry.url), open.contains(String(origin)) { continue }
            if book.admit(url: candidate.entry.url) { chosen.append(candidate) }
        }
        write(book)
        result.heldFor = book.heldFor
        result.probeIn = book.probeIn
        result.pausedOrigins = book.pausedOrigins
        return chosen
    }

    /// Writes back what a claim took.
    mutating func write(_ book: OriginFlowBook) {
        let (changed, idle) = book.written()
        for row in changed { flows[row.origin] = row }
        for origin in idle { flows[origin] = nil }
    }

    /// Returns whether the stored limits changed.
    mutating func writeOriginLimits(_ limits: [FlowControl.OriginLimit], now: QueueTime) -> Bool {
        let table = OriginLimitTable(limits)
        guard !table.agrees(with: flows.mapValues(\.limit)) else { return false }
        for origin in Set(flows.keys).union(limits.map(\.origin)) {
            var row = flows[origin] ?? OriginFlow(origin: origin)
            row.set(table.limit(for: origin), now: now.uptime)
            flows[origin] = row.isIdle(at: now.uptime) ? nil : row
        }
        return true
    }

    func readOriginFlows(now: QueueTime) -> [FlowControl.OriginStatus] {
        let inflight = inflightByOrigin()
        return flows.values.filter { !$0.isIdle(at: now.uptime) }.sorted { $0.origin < $1.origin }.map { row in
            row.status(at: now.uptime, inflight: inflight[row.origin[...], default: 0]) { now.wallTime(atUptime: $0) }
        }
    }

    mutating func resumeOriginFlow(origin: String, now: QueueTime) -> Bool {
        guard var row = flows[origin], row.isPaused(at: now.uptime) || row.window != nil || row.isOpen else { return false }
        let wasOpen = row.isOpen
        row.resume()
        flows[origin] = row.isIdle(at: now.uptime) ? nil : row
        if wasOpen { makeDue(origin: origin, now: now) }
        return true
    }
}
