import HTTPCore

/// The limits a queue stores (``FlowControl/limits``) as its flow rows hold them: a row of its
/// own for each origin and each pattern named, and, for an origin a pattern matches, a row
/// derived from the pattern (made when the origin is first claimed, or paused or shrunk) that
/// holds the pattern's limit as the origin's own. Store-neutral: each store keeps its rows by
/// these rules (PostgreSQL in SQL, `origin_matches` and `pattern_for`, the same ones).
package struct OriginLimitTable {
    private var exact: [String: FlowControl.OriginLimit] = [:]
    /// The patterns, the longest (the most specific) first.
    private(set) var patterns: [FlowControl.OriginLimit] = []

    package init(_ limits: [FlowControl.OriginLimit]) {
        for limit in limits { exact[limit.origin] = limit }
        patterns = exact.values.filter(\.isPattern).sorted { ($0.origin.utf8.count, $1.origin) > ($1.origin.utf8.count, $0.origin) }
    }

    /// The rows' limits as this table (`rows`: the pattern rows among them).
    package init(rows: [OriginFlow]) {
        self.init(rows.filter { $0.origin.contains("*") }.compactMap(\.limit))
    }

    /// Whether `pattern` (`https://*.example.com`) matches `origin` (an origin, not a pattern):
    /// the same scheme, domain and port, and one label or more in place of `*`.
    package static func matches(pattern: String, origin: some StringProtocol) -> Bool {
        guard let star = pattern.utf8.firstIndex(of: UInt8(ascii: "*")) else { return false }
        let prefix = pattern.utf8[..<star], suffix = pattern.utf8[pattern.utf8.index(after: star)...]
        let bytes = origin.utf8
        guard bytes.count > prefix.count + suffix.count, bytes.starts(with: prefix), bytes.reversed().starts(with: suffix.reversed()) else {
            return false
        }
        let middle = bytes.dropFirst(prefix.count).dropLast(suffix.count)
        return !middle.contains { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "*") }
    }

    /// The most specific pattern matching `origin`.
    package func pattern(for origin: some StringProtocol) -> FlowControl.OriginLimit? {
        guard !origin.contains("*") else { return nil }
        return patterns.first { Self.matches(pattern: $0.origin, origin: origin) }
    }

    /// The limit the row of `origin` holds: its own, else its pattern's (as its own).
    package func limit(for origin: String) -> FlowControl.OriginLimit? {
        if let own = exact[origin] { return own }
        guard var derived = pattern(for: origin) else { return nil }
        derived.origin = origin
        return derived
    }

    /// Whether the stored rows' limits (by origin, `nil` for a row with none) are already what
    /// these limits make of them: a drainer that starts with the same limits writes nothing.
    package func agrees(with stored: [String: FlowControl.OriginLimit?]) -> Bool {
        exact.keys.allSatisfy { stored[$0] != nil } && stored.allSatisfy { origin, limit in limit == self.limit(for: origin) }
    }
}

/// A claim's view of the flow rows: which entries it may take, in claim order, and the rows to
/// write back afterwards. Store-neutral: SQLite and the memory store claim through it;
/// PostgreSQL keeps the same rules in `settle_and_claim`.
package struct OriginFlowBook {
    private var flows: [Substring: OriginFlow]
    /// What each origin may still take in this claim.
    private var allowance: [Substring: Int] = [:]
    private var taken: [Substring: Int] = [:]
    private let inflight: [Substring: Int]
    private let patterns: OriginLimitTable
    /// Origins a pattern gave a row in this claim, and origins no pattern matches.
    private var derived: Set<Substring> = []
    private var unmatched: Set<Substring> = []
    private let now: Double
    /// The soonest a held origin frees by time alone (a pause's end, the next token), and the
    /// soonest an open circuit's next probe is due.
    private(set) var soonest: Double?
    private(set) var soonestProbe: Double?
    /// Whether an entry was passed over because of its origin.
    private(set) var held = false
    /// Origins whose circuit is open and whose probe this claim may send (one each).
    private var probing: Set<Substring> = []
    /// The origins whose circuit is open, in the order of their text.
    package private(set) var openOrigins: [String] = []

    /// - Parameter inflight: entries in flight by origin, in every drainer.
    package init(_ rows: [OriginFlow], inflight: [Substring: Int], now: Double) {
        self.now = now
        self.inflight = inflight
        patterns = OriginLimitTable(rows: rows)
        var flows: [Substring: OriginFlow] = [:]
        // A pattern's own row holds no origin's flow.
        for row in rows where !row.origin.contains("*") { flows[row.origin[...]] = row }
        self.flows = flows
        for row in flows.values { allow(row) }
        openOrigins = flows.values.filter(\.isOpen).map(\.origin).sorted()
        // An open circuit's entries are never walked (a backlog of them would hold the claim's
        // walk for good): its origin is held by time until its next probe, whether or not an
        // entry of it is due.
        for origin in openOrigins where flows[origin[...]]!.openUntil! > now { passOver(origin[...]) }
    }

    /// The origins whose probe this claim may send, in the order of their text: a claim takes
    /// the first of each one's due entries (in claim order) before it walks the others', and
    /// walks none of an open circuit's (``openOrigins``).
    package var probingOrigins: [String] { probing.map(String.init).sorted() }

    private mutating func allow(_ row: OriginFlow) {
        let origin = row.origin[...]
        var allowed = Int.max
        if row.isPaused(at: now) { allowed = 0 }
        // An open circuit lets one probe go for the whole queue, once it is due and nothing of
        // the origin is in flight (a probe, or what was sent before it opened).
        if let due = row.openUntil {
            if due <= now && inflight[origin, default: 0] == 0 {
                allowed = min(allowed, 1)
                probing.insert(origin)
            } else {
                allowed = 0
            }
        }
        if row.rate != nil { allowed = min(allowed, row.wholeTokens(at: now)) }
        let cap = min(row.cap ?? .max, row.window ?? .max)
        if cap != .max { allowed = min(allowed, max(0, cap - inflight[origin, default: 0])) }
        allowance[origin] = allowed
    }

    /// The origins that may take nothing at the claim's time: paused, out of tokens, or at their
    /// concurrency. Their due entries are not counted as due (``QueueCounts/heldByFlow``).
    package var heldOrigins: [String] {
        flows.values.filter { allowance[$0.origin[...], default: .max] < 1 }.map(\.origin)
    }

    /// The origins paused, or whose circuit is open, at the claim's time: a drainer gives back
    /// what it holds of them unsent.
    package var pausedOrigins: [String] {
        flows.values.filter { $0.isPaused(at: now) || $0.isOpen }.map(\.origin)
    }

    /// What a claim may do with an entry.
    package enum Admission: Sendable, Hashable {
        /// Passed over: its origin is paused, at a limit, or its circuit is open.
        case held
        /// Claimed.
        case admitted
        /// Claimed as its origin's probe: the one request its open circuit lets go.
        case probe
    }

    /// Whether an entry to `url` may be claimed; counts it when it may.
    package mutating func admit(url: String) -> Bool {
        admission(url: url) != .held
    }

    /// What a claim may do with an entry to `url`; counts it when it may be claimed.
    package mutating func admission(url: String) -> Admission {
        guard admitOne(url: url) else { return .held }
        guard let origin = FlowOrigin.key(ofURL: url), probing.remove(origin) != nil else { return .admitted }
        return .probe
    }

    private mutating func admitOne(url: String) -> Bool {
        guard let origin = FlowOrigin.key(ofURL: url) else { return true }
        if allowance[origin] == nil {
            // An origin with no row of its own: a pattern's limit, if one matches, gives it one.
            guard !patterns.patterns.isEmpty, !unmatched.contains(origin) else { return true }
            guard let limit = patterns.limit(for: String(origin)) else {
                unmatched.insert(origin)
                return true
            }
            var row = OriginFlow(origin: String(origin))
            row.set(limit, now: now)
            flows[origin] = row
            derived.insert(origin)
            allow(row)
        }
        guard let left = allowance[origin] else { return true }
        guard left > 0 else {
            passOver(origin)
            return false
        }
        allowance[origin] = left - 1
        taken[origin, default: 0] += 1
        return true
    }

    /// An entry of `origin` was passed over (or an open circuit holds it): the claim was held,
    /// and frees by time at the soonest of the origin's pause's end, its next probe and its
    /// next token.
    private mutating func passOver(_ origin: Substring) {
        held = true
        // Only the origins an entry was passed over for count towards when the claim frees:
        // another origin's pause frees nothing this claim wanted.
        if let row = flows[origin], row.isPaused(at: now) { soonest = min(soonest ?? .infinity, row.pausedUntil ?? now) }
        // A circuit's next probe, when it is still to come (one in flight frees it by its answer).
        if let due = flows[origin]?.openUntil, due > now { soonestProbe = min(soonestProbe ?? .infinity, due) }
        if let row = flows[origin], let rate = row.rate, !row.isPaused(at: now) {
            // The next token, if tokens are what is short (PostgreSQL's statement counts it
            // the same way, from the bucket as this claim leaves it).
            let missing = 1 - (row.tokens(at: now) - Double(taken[origin, default: 0]))
            if missing > 0 { soonest = min(soonest ?? .infinity, now + missing / rate) }
        }
    }

    /// The rows after the claim: buckets debited for what it took (and refilled to `now`), the
    /// rows patterns gave origins, and the origins whose rows hold nothing any more, to delete.
    package func written() -> (changed: [OriginFlow], idle: [String]) {
        var changed: [OriginFlow] = []
        var idle: [String] = []
        for (origin, var row) in flows {
            if row.isIdle(at: now) {
                idle.append(row.origin)
                continue
            }
            if row.rate != nil, let count = taken[origin] {
                row.tokens = row.tokens(at: now) - Double(count)
                // Never back: a claim whose clock was read before it waited for the store can
                // come after one that read later, and moving the refill back to it would count
                // the time between the two readings twice (a token too many each time).
                row.refilledAt = max(row.refilledAt, now)
            } else if !derived.contains(origin) {
                continue
            }
            changed.append(row)
        }
        return (changed, idle)
    }

    /// How long until a held origin frees by time alone, when an entry was held.
    package var heldFor: Duration? {
        guard held, let soonest else { return nil }
        return Duration.clamped(seconds: max(0, soonest - now)) ?? .zero
    }

    /// How long until the soonest next probe of an open circuit, when one is to come.
    package var probeIn: Duration? {
        guard held, let soonestProbe else { return nil }
        return Duration.clamped(seconds: max(0, soonestProbe - now)) ?? .zero
    }
}

extension OriginFlow {
    /// A new row for `origin` (a pause or an overload makes it): it holds the limit of the
    /// pattern that matches it, if any, as a claim's would.
    package init(origin: String, patterns: OriginLimitTable, now: Double) {
        self.init(origin: origin)
        if let limit = patterns.limit(for: origin) { set(limit, now: now) }
    }
}
