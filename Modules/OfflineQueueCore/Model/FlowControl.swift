public import Foundation
import HTTPCore

/// How the queue treats the servers it delivers to (``QueueConfiguration/flow``): it is a good
/// citizen of each origin, whichever drainer, process or host sends.
///
/// - **Backpressure.** A 429 or 503 with `Retry-After` pauses the answer's origin, for every
///   drainer of the queue, until then (at most ``maxPause``); entries to other origins flow on.
///   Repeated 429s or 503s without it halve the concurrency towards the origin, which grows
///   back by one after ``growAfter`` deliveries in a row. Both are stored in the queue, so a
///   restarted drainer, another process or another host honours them.
/// - **Limits.** ``limits`` caps an origin's rate (a token bucket) and concurrency across every
///   drainer of the queue: the state is a row per limited origin, read and debited in the
///   transaction that claims.
/// - **Reconnect spread.** ``reconnectSpread`` delays a service's first drain after the network
///   comes back by a random share of it, drawn once per host, so that a fleet of devices does
///   not replay all at once.
///
/// A queue without limits, pauses or shrunk concurrencies keeps no rows and claims as before.
///
/// ```swift
/// var configuration = QueueConfiguration(path: path)
/// configuration.flow.limits = [try OriginLimit("https://api.example.com", requestsPerSecond: 10, concurrency: 4)]
/// configuration.flow.reconnectSpread = .seconds(30)
/// ```
public struct FlowControl: Sendable, Hashable {
    /// Limits by origin, held by every drainer of the queue. A drainer that sets any stores
    /// them as the queue's (replacing those another stored); one that sets none leaves the
    /// stored ones as they are.
    public var limits: [OriginLimit]
    /// The longest a `Retry-After` pauses an origin: one hour unless set.
    public var maxPause: Duration
    /// Deliveries in a row that grow a halved concurrency by one: 8 unless set.
    public var growAfter: Int
    /// The bound of the random delay before the first drain after the network comes back,
    /// drawn once per host; `nil` (the default): none, so a single service replays at once.
    public var reconnectSpread: Duration?

    /// Flow as given; by default no limits, pauses of an hour at most, growth after 8 deliveries
    /// and no reconnect spread. A `growAfter` below 1 counts as 1.
    public init(limits: [OriginLimit] = [], maxPause: Duration = .seconds(3600), growAfter: Int = 8, reconnectSpread: Duration? = nil) {
        self.limits = limits
        self.maxPause = maxPause
        self.growAfter = max(1, growAfter)
        self.reconnectSpread = reconnectSpread
    }

    /// This host's share of ``reconnectSpread``, in `0..<1`: drawn once per host from its machine
    /// id (`/etc/machine-id`, else its host name), so that a host waits the same share at every
    /// return of the network and a fleet's hosts spread evenly.
    package static let hostShare: Double = {
        let id = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        let seed = id.flatMap { $0.isEmpty ? nil : $0 } ?? ProcessInfo.processInfo.hostName
        // FNV-1a, 64 bits: the same on every platform and run (Swift's hashing is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in seed.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Double(hash % 1_000_000) / 1_000_000
    }()

    /// What a claim needs of these settings besides the limits.
    package func settings(concurrency: Int) -> FlowSettings {
        FlowSettings(maxPause: maxPause.seconds, growAfter: growAfter, ceiling: max(1, concurrency))
    }
}

/// A limit on what the queue sends to one origin, held across every drainer of the queue.
///
/// ```swift
/// try OriginLimit("https://api.example.com", requestsPerSecond: 10)              // 10/s, one at a time in a burst
/// try OriginLimit("https://api.example.com", requestsPerSecond: 50, burst: 10)  // 50/s, 10 at once after a lull
/// try OriginLimit("https://api.example.com", concurrency: 4)                    // 4 in flight at most
/// try OriginLimit(parsing: "https://api.example.com=10/s,burst=5,concurrency=4")
/// ```
public struct OriginLimit: Sendable, Hashable, Codable {
    /// The origin, as an entry's URL begins: scheme, host and port if any (`https://api.example.com:8443`);
    /// or a pattern, `*.` before a domain (`https://*.example.com`), which gives each origin it
    /// matches a limit of its own (see ``isPattern``).
    public var origin: String
    /// Requests a second at most; `nil`: no rate limit.
    public var requestsPerSecond: Double?
    /// Requests that may go at once after a lull (the bucket's size): 1 unless set.
    public var burst: Int
    /// Requests in flight at most; `nil`: no cap.
    public var concurrency: Int?

    /// - Throws: ``QueueError/invalidRequest(_:)`` for an origin that is not `http(s)://host[:port]`
    ///   or `http(s)://*.domain[:port]`, a rate that is not positive, or a burst or concurrency below 1.
    public init(_ origin: String, requestsPerSecond: Double? = nil, burst: Int = 1, concurrency: Int? = nil) throws(QueueError) {
        var text = origin
        while text.hasSuffix("/") { text.removeLast() }
        // A pattern is checked as the origin it would be with a label in place of its `*`.
        var probe = text
        if let star = probe.range(of: "://*.") { probe.replaceSubrange(star, with: "://x.") }
        guard !probe.contains("*"), let url = URL(string: probe), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty, url.path.isEmpty, url.query == nil, url.fragment == nil, url.user == nil,
              FlowOrigin.key(ofURL: probe).map({ $0 == probe[...] }) ?? false else {
            throw .invalidRequest(
                "\(origin.debugDescription) is not an origin (http or https, a host or *.domain, a port if any, nothing after)"
            )
        }
        if let requestsPerSecond, !(requestsPerSecond > 0 && requestsPerSecond.isFinite) {
            throw .invalidRequest("the rate for \(text) must be a positive number of requests a second, not \(requestsPerSecond)")
        }
        guard burst >= 1 else { throw .invalidRequest("the burst for \(text) must be at least 1, not \(burst)") }
        if let concurrency, concurrency < 1 { throw .invalidRequest("the concurrency for \(text) must be at least 1, not \(concurrency)") }
        guard requestsPerSecond != nil || concurrency != nil else {
            throw .invalidRequest("a limit for \(text) needs a rate (requestsPerSecond), a concurrency, or both")
        }
        self.origin = text
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
        self.concurrency = concurrency
    }

    /// A limit as `sync run --origin-limit` and configuration files write it:
    /// `ORIGIN=RATE/s[,burst=N][,concurrency=N]` or `ORIGIN=concurrency=N`.
    public init(parsing text: String) throws(QueueError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw .invalidRequest("\(text.debugDescription) is not ORIGIN=RATE/s[,burst=N][,concurrency=N]")
        }
        let origin = String(text[..<equals])
        var rate: Double?
        var burst = 1
        var concurrency: Int?
        for part in text[text.index(after: equals)...].split(separator: ",") {
            let part = part.trimmingCharacters(in: .whitespaces)
            if part.hasSuffix("/s"), let value = Double(part.dropLast(2)) {
                rate = value
            } else if part.hasPrefix("burst="), let value = Int(part.dropFirst(6)) {
                burst = value
            } else if part.hasPrefix("concurrency="), let value = Int(part.dropFirst(12)) {
                concurrency = value
            } else {
                throw .invalidRequest("\(part.debugDescription) in \(text.debugDescription) is not RATE/s, burst=N or concurrency=N")
            }
        }
        try self.init(origin, requestsPerSecond: rate, burst: burst, concurrency: concurrency)
    }

    /// Whether ``origin`` is a pattern (`https://*.example.com`). A pattern's limit is held by
    /// each origin it matches on its own, a bucket and a concurrency each: `*` stands for one
    /// label or more (`a.example.com`, `a.b.example.com`, not `example.com`), and the scheme and
    /// port are as written. An origin's own limit comes before a pattern's; of two patterns, the
    /// longer.
    public var isPattern: Bool { origin.contains("*") }

    /// As ``init(parsing:)`` reads it.
    public var text: String {
        var parts: [String] = []
        if let requestsPerSecond { parts.append("\(requestsPerSecond.formatted(.number.grouping(.never)))/s") }
        if requestsPerSecond != nil && burst != 1 { parts.append("burst=\(burst)") }
        if let concurrency { parts.append("concurrency=\(concurrency)") }
        return origin + "=" + parts.joined(separator: ",")
    }
}

/// An origin's flow as an operator sees it (``OfflineQueue/originFlows()``, `sync stats`, the
/// console): paused until when and why, the concurrency allowed now, the limit set.
public struct OriginFlowStatus: Sendable, Hashable, Codable {
    /// The origin (`https://api.example.com:8443`), or the pattern a limit was set for
    /// (`https://*.example.com`).
    public var origin: String
    /// When a `Retry-After` pause ends (a wall time, for showing); `nil` when none is in force.
    public var pausedUntil: Date?
    /// The status that paused it.
    public var pauseStatus: Int?
    /// The concurrency 429s and 503s without `Retry-After` shrank it to; `nil` when not shrunk.
    public var concurrency: Int?
    /// The limit stored for it, if any.
    public var limit: OriginLimit?
    /// Its entries in flight now, in every drainer.
    public var inflight: Int

    /// The flow of `origin`; unless told otherwise not paused, not shrunk, unlimited and with
    /// nothing in flight.
    public init(origin: String, pausedUntil: Date? = nil, pauseStatus: Int? = nil, concurrency: Int? = nil, limit: OriginLimit? = nil, inflight: Int = 0) {
        self.origin = origin
        self.pausedUntil = pausedUntil
        self.pauseStatus = pauseStatus
        self.concurrency = concurrency
        self.limit = limit
        self.inflight = inflight
    }
}

/// What a claim needs of ``FlowControl`` besides the limits (the stores' side of it).
package struct FlowSettings: Sendable, Hashable {
    /// The longest pause, in seconds.
    package var maxPause: Double = 3600
    /// Deliveries in a row that grow a halved concurrency by one.
    package var growAfter: Int = 8
    /// The claiming drainer's concurrency: a halved concurrency that grows back to it is no
    /// longer held.
    package var ceiling: Int = 8

    package init(maxPause: Double = 3600, growAfter: Int = 8, ceiling: Int = 8) {
        self.maxPause = maxPause
        self.growAfter = growAfter
        self.ceiling = ceiling
    }
}

/// How an entry's origin is told from its stored URL: the text up to the path, query or
/// fragment (`https://api.example.com:8443` of `https://api.example.com:8443/v1?x`), as
/// ``EntryFilter/matches(origin:url:)`` reads it. A sealed entry's stored URL is its origin
/// alone, which gives the same.
package enum FlowOrigin {
    package static func key(ofURL url: String) -> Substring? {
        guard let scheme = url.range(of: "://") else { return nil }
        let end = url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        return url[..<end]
    }
}

/// What an attempt's answer says about its origin.
package enum FlowSignal: Sendable, Hashable {
    /// 429 or 503 with `Retry-After`: pause the origin for this long.
    case pause(Duration, status: Int)
    /// 429 or 503 without it: the origin is overloaded; halve the concurrency towards it.
    case overload(status: Int)
    /// Delivered: counts towards growing a halved concurrency back.
    case success
}

extension Settlement {
    /// What this settlement says about its entry's origin, if anything.
    package var flowSignal: FlowSignal? {
        switch transition {
        case .deliver: return .success
        case .retry(let retry):
            guard let status = retry.status, status == 429 || status == 503 else { return nil }
            if let pause = retry.originPause { return .pause(pause, status: status) }
            return .overload(status: status)
        case .deadLetter(let dead):
            guard let status = dead.status, status == 429 || status == 503 else { return nil }
            return .overload(status: status)
        case .release, .conflict, .drop: return nil
        }
    }
}

/// One origin's stored flow state (a row of the store's flow table). Times are readings of the
/// store's clock in seconds: the boot clock on SQLite and in memory, the fleet's on PostgreSQL.
package struct OriginFlow: Sendable, Hashable {
    package var origin: String
    /// When a `Retry-After` pause ends; `nil` or past: none.
    package var pausedUntil: Double?
    /// The same as a wall time, for showing and for carrying over a reboot.
    package var pausedUntilWall: Double?
    package var pauseStatus: Int?
    /// The concurrency overloads shrank it to; `nil`: not shrunk.
    package var window: Int?
    /// Deliveries in a row since the window last changed.
    package var successes = 0
    /// The stored limit's parts.
    package var rate: Double?
    package var burst: Int?
    package var cap: Int?
    /// The token bucket: tokens at `refilledAt`.
    package var tokens: Double = 0
    package var refilledAt: Double = 0

    package init(origin: String) {
        self.origin = origin
    }

    package var limit: OriginLimit? {
        guard rate != nil || cap != nil else { return nil }
        return try? OriginLimit(origin, requestsPerSecond: rate, burst: burst ?? 1, concurrency: cap)
    }

    /// Sets the stored limit, keeping the bucket's tokens (at most a full bucket).
    package mutating func set(_ limit: OriginLimit?, now: Double) {
        let startsBucket = rate == nil && limit?.requestsPerSecond != nil
        rate = limit?.requestsPerSecond
        burst = limit.map(\.burst)
        cap = limit?.concurrency
        if startsBucket {
            // A new bucket starts full.
            tokens = Double(burst ?? 1)
            refilledAt = now
        } else if let burst {
            tokens = min(tokens, Double(burst))
        }
    }

    /// Whether a pause is in force at `now`.
    package func isPaused(at now: Double) -> Bool { pausedUntil.map { $0 > now } ?? false }

    /// The bucket's tokens at `now`.
    package func tokens(at now: Double) -> Double {
        guard let rate else { return .infinity }
        return min(Double(burst ?? 1), tokens + max(0, now - refilledAt) * rate)
    }

    /// A token due within this many seconds of a claim's time is the claim's. Readings of the
    /// clock subtract with an error: about 1e-12 s on the boot clock (seconds since boot), and
    /// up to one step of a double, 2.4e-7 s, on PostgreSQL's fleet time (seconds since the
    /// epoch). Counted without it, the token due exactly now read as 0.99999... and was
    /// refused: at 17,000 s since boot, and at one claim in five at 10 per second on PostgreSQL,
    /// whose buckets debited below zero by the error, capped at the burst whenever it fell the
    /// other way, lose it for good.
    package static let timeTolerance = 1e-6

    /// The bucket's whole tokens at `now`, a token due within ``timeTolerance`` of it counted.
    package func wholeTokens(at now: Double) -> Int {
        guard let rate else { return .max }
        return Int(min(Double(burst ?? 1), tokens + (max(0, now - refilledAt) + Self.timeTolerance) * rate).rounded(.down))
    }

    /// Whether the row holds nothing any more at `now`: no pause in force, no shrunk window, no
    /// limit. Such a row is deleted.
    package func isIdle(at now: Double) -> Bool {
        !isPaused(at: now) && window == nil && rate == nil && cap == nil
    }

    /// Applies what an answer said (`inflight`: the origin's entries in flight before it ended,
    /// this one counted).
    package mutating func record(_ signal: FlowSignal, now: Double, wall: Double, inflight: Int, settings: FlowSettings) {
        switch signal {
        case .pause(let duration, let status):
            let length = min(max(0, duration.seconds), settings.maxPause)
            if (pausedUntil ?? -.infinity) < now + length {
                pausedUntil = now + length
                pausedUntilWall = wall + length
                pauseStatus = status
            }
        case .overload:
            let base = window ?? max(1, min(inflight, cap ?? .max))
            window = max(1, base / 2)
            successes = 0
        case .success:
            guard let current = window else { return }
            successes += 1
            guard successes >= settings.growAfter else { return }
            successes = 0
            let grown = current + 1
            window = grown >= min(settings.ceiling, cap ?? .max) ? nil : grown
        }
    }
}
