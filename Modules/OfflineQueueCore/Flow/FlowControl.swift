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
    public var limits: [FlowControl.OriginLimit]
    /// The longest a `Retry-After` pauses an origin: one hour unless set.
    public var maxPause: Duration
    /// Deliveries in a row that grow a halved concurrency by one: 8 unless set.
    public var growAfter: Int
    /// The bound of the random delay before the first drain after the network comes back,
    /// drawn once per host; `nil` (the default): none, so a single service replays at once.
    public var reconnectSpread: Duration?
    /// When an origin's circuit opens, and how it is probed (``OriginHealth``).
    public var health: OriginHealth

    /// Flow as given; by default no limits, pauses of an hour at most, growth after 8 deliveries,
    /// no reconnect spread, and circuits as ``OriginHealth/init(openAfter:probeInterval:maxProbeInterval:storesWhileOpen:)``
    /// sets them. A `growAfter` below 1 counts as 1.
    public init(
        limits: [FlowControl.OriginLimit] = [], maxPause: Duration = .seconds(3600), growAfter: Int = 8, reconnectSpread: Duration? = nil,
        health: OriginHealth = OriginHealth()
    ) {
        self.limits = limits
        self.maxPause = maxPause
        self.growAfter = max(1, growAfter)
        self.reconnectSpread = reconnectSpread
        self.health = health
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
        FlowSettings(
            maxPause: maxPause.seconds, growAfter: growAfter, ceiling: max(1, concurrency), openAfter: health.openAfter,
            probeInterval: health.probeInterval.seconds, maxProbeInterval: health.maxProbeInterval.seconds
        )
    }
}

extension FlowControl {
    /// A limit on what the queue sends to one origin, held across every drainer of the queue.
    ///
    /// ```swift
    /// try OriginLimit("https://api.example.com", requestsPerSecond: 10)              // 10/s, one at a time in a burst
    /// try OriginLimit("https://api.example.com", requestsPerSecond: 50, burst: 10)  // 50/s, 10 at once after a lull
    /// try OriginLimit("https://api.example.com", concurrency: 4)                    // 4 in flight at most
    /// try OriginLimit(parsing: "https://api.example.com=10/s,burst=5,concurrency=4")
    /// try OriginLimit("https://flaky.example.com", openAfter: 20)                   // its circuit opens after 20 failures in a row
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
        /// Failures in a row that open this origin's circuit (``OriginHealth``), in place of the
        /// queue's ``OriginHealth/openAfter``; 0 never opens it. `nil`: the queue's.
        public var openAfter: Int?

        /// - Throws: ``QueueError/invalidRequest(_:)`` for an origin that is not `http(s)://host[:port]`
        ///   or `http(s)://*.domain[:port]`, a rate that is not positive, a burst or concurrency below
        ///   1, an `openAfter` below 0, or none of a rate, a concurrency and an `openAfter`.
        public init(_ origin: String, requestsPerSecond: Double? = nil, burst: Int = 1, concurrency: Int? = nil, openAfter: Int? = nil) throws(QueueError) {
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
            if let openAfter, openAfter < 0 { throw .invalidRequest("open-after for \(text) must be 0 (never) or more, not \(openAfter)") }
            guard requestsPerSecond != nil || concurrency != nil || openAfter != nil else {
                throw .invalidRequest("a limit for \(text) needs a rate (requestsPerSecond), a concurrency, or open-after")
            }
            self.origin = text
            self.requestsPerSecond = requestsPerSecond
            self.burst = burst
            self.concurrency = concurrency
            self.openAfter = openAfter
        }

        /// A limit as `sync run --origin-limit` and configuration files write it:
        /// `ORIGIN=RATE/s[,burst=N][,concurrency=N][,open-after=N]`, `ORIGIN=concurrency=N` or
        /// `ORIGIN=open-after=N`.
        public init(parsing text: String) throws(QueueError) {
            guard let equals = text.firstIndex(of: "=") else {
                throw .invalidRequest("\(text.debugDescription) is not ORIGIN=RATE/s[,burst=N][,concurrency=N][,open-after=N]")
            }
            let origin = String(text[..<equals])
            var rate: Double?
            var burst = 1
            var concurrency: Int?
            var openAfter: Int?
            for part in text[text.index(after: equals)...].split(separator: ",") {
                let part = part.trimmingCharacters(in: .whitespaces)
                if part.hasSuffix("/s"), let value = Double(part.dropLast(2)) {
                    rate = value
                } else if part.hasPrefix("burst="), let value = Int(part.dropFirst(6)) {
                    burst = value
                } else if part.hasPrefix("concurrency="), let value = Int(part.dropFirst(12)) {
                    concurrency = value
                } else if part.hasPrefix("open-after="), let value = Int(part.dropFirst(11)) {
                    openAfter = value
                } else {
                    throw .invalidRequest("\(part.debugDescription) in \(text.debugDescription) is not RATE/s, burst=N, concurrency=N or open-after=N")
                }
            }
            try self.init(origin, requestsPerSecond: rate, burst: burst, concurrency: concurrency, openAfter: openAfter)
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
            if let openAfter { parts.append("open-after=\(openAfter)") }
            return origin + "=" + parts.joined(separator: ",")
        }
    }
}

extension FlowControl {
    /// An origin's flow as an operator sees it (``OfflineQueue/originFlows()``, `sync stats`, the
    /// console): paused until when and why, the concurrency allowed now, the limit set.
    public struct OriginStatus: Sendable, Hashable, Codable {
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
        public var limit: FlowControl.OriginLimit?
        /// Its entries in flight now, in every drainer.
        public var inflight: Int
        /// Its circuit, when open (``OriginHealth``).
        public var circuit: Circuit?
        /// The answers in a row that said its server is unwell, since its last delivery: the
        /// circuit opens when they reach ``OriginHealth/openAfter``.
        public var failures: Int

        /// An origin's open circuit.
        public struct Circuit: Sendable, Hashable, Codable {
            /// When it opened (a wall time, for showing).
            public var openedAt: Date
            /// When the next probe may go (a wall time, for showing); past: due, or in flight.
            public var nextProbeAt: Date
            /// The answers in a row that said the server is unwell, since its last delivery.
            public var failures: Int
            /// The last of them, in words (`HTTP 502`, a reset).
            public var lastError: String?

            /// A circuit as an operator sees it: open since `openedAt`, probed next at `nextProbeAt`,
            /// after `failures` unwell answers in a row, the last of them `lastError`.
            public init(openedAt: Date, nextProbeAt: Date, failures: Int, lastError: String?) {
                self.openedAt = openedAt
                self.nextProbeAt = nextProbeAt
                self.failures = failures
                self.lastError = lastError
            }
        }

        /// The flow of `origin`; unless told otherwise not paused, not shrunk, unlimited, with its
        /// circuit closed and nothing in flight.
        public init(
            origin: String, pausedUntil: Date? = nil, pauseStatus: Int? = nil, concurrency: Int? = nil, limit: FlowControl.OriginLimit? = nil, inflight: Int = 0,
            circuit: Circuit? = nil, failures: Int = 0
        ) {
            self.failures = failures
            self.origin = origin
            self.pausedUntil = pausedUntil
            self.pauseStatus = pauseStatus
            self.concurrency = concurrency
            self.limit = limit
            self.inflight = inflight
            self.circuit = circuit
        }
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
    /// Failures in a row that open an origin's circuit; 0: never (``OriginHealth/openAfter``).
    package var openAfter: Int = 5
    /// The first wait before a probe, and the longest, in seconds.
    package var probeInterval: Double = 1
    package var maxProbeInterval: Double = 60

    package init(
        maxPause: Double = 3600, growAfter: Int = 8, ceiling: Int = 8, openAfter: Int = 5, probeInterval: Double = 1, maxProbeInterval: Double = 60
    ) {
        self.maxPause = maxPause
        self.growAfter = growAfter
        self.ceiling = ceiling
        self.openAfter = openAfter
        self.probeInterval = probeInterval
        self.maxProbeInterval = maxProbeInterval
    }
}

/// How an entry's origin is told from its stored URL: the text up to the path, query or
/// fragment (`https://api.example.com:8443` of `https://api.example.com:8443/v1?x`), as
/// ``EntryFilter/matches(origin:url:)`` reads it. A sealed entry's stored URL is its origin
/// alone, which gives the same.
package enum FlowOrigin {
    package static func key(ofURL url: String) -> Substring? {
        // By the UTF-8 bytes: Foundation's `range(of:)` allocated on every call, and a drain
        // asks this of every entry it starts (its origin's sends under way).
        let bytes = url.utf8
        var index = bytes.startIndex
        var host: String.Index?
        while index != bytes.endIndex {
            if bytes[index] == UInt8(ascii: ":") {
                let slash = bytes.index(after: index)
                if slash != bytes.endIndex, bytes[slash] == UInt8(ascii: "/") {
                    let second = bytes.index(after: slash)
                    if second != bytes.endIndex, bytes[second] == UInt8(ascii: "/") {
                        host = bytes.index(after: second)
                        break
                    }
                }
            }
            index = bytes.index(after: index)
        }
        guard let host else { return nil }
        let end = bytes[host...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        return url[..<end]
    }
}

/// What an attempt's answer says about its origin.
package enum FlowSignal: Sendable, Hashable {
    /// 429 or 503 with `Retry-After`: pause the origin for this long.
    case pause(Duration, status: Int)
    /// 429 or 503 without it: the origin is overloaded; halve the concurrency towards it (a
    /// 503 also counts towards opening its circuit).
    case overload(status: Int)
    /// The server is unwell (``OriginHealth``): a 5xx but 501 and 505, or a failure below HTTP
    /// that says so; counts towards opening its circuit. `probe`: the circuit's probe failed.
    case unwell(String, probe: Bool)
    /// Delivered: counts towards growing a halved concurrency back, and closes a circuit.
    case success
}

extension Settlement {
    /// What this settlement says about its entry's origin, if anything.
    package var flowSignal: FlowSignal? {
        let status: Int?
        switch transition {
        case .deliver: return .success
        case .retry(let retry):
            // A probe's 503 is the circuit's: it puts the next probe further off.
            if let status = retry.status, status == 429 || (status == 503 && !probe) {
                if let pause = retry.originPause { return .pause(pause, status: status) }
                return .overload(status: status)
            }
            status = retry.status
        case .deadLetter(let dead):
            if let status = dead.status, status == 429 || (status == 503 && !probe) { return .overload(status: status) }
            status = dead.status
        case .release, .conflict, .drop: return nil
        }
        if let status, OriginHealth.isUnwell(status: status) { return .unwell("HTTP \(status)", probe: probe) }
        if let unwell { return .unwell(unwell, probe: probe) }
        return nil
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
    /// The stored limit's failures that open the circuit (``FlowControl/OriginLimit/openAfter``), when
    /// not the queue's.
    package var openAfter: Int?
    /// Answers in a row that said the server is unwell, since its last delivery
    /// (``OriginHealth``), and the last of them in words.
    package var failures = 0
    package var lastFailure: String?
    /// When the open circuit's next probe may go; `nil`: the circuit is closed.
    package var openUntil: Double?
    /// The same as a wall time, for showing and for carrying over a reboot.
    package var openUntilWall: Double?
    /// The wait the next probe was scheduled after: twice the last one after each that failed.
    package var probeWait: Double?
    /// When the circuit opened, a wall time, for showing.
    package var openedAt: Double?

    package init(origin: String) {
        self.origin = origin
    }

    package var limit: FlowControl.OriginLimit? {
        guard rate != nil || cap != nil || openAfter != nil else { return nil }
        return try? FlowControl.OriginLimit(origin, requestsPerSecond: rate, burst: burst ?? 1, concurrency: cap, openAfter: openAfter)
    }

    /// Sets the stored limit, keeping the bucket's tokens (at most a full bucket).
    package mutating func set(_ limit: FlowControl.OriginLimit?, now: Double) {
        let startsBucket = rate == nil && limit?.requestsPerSecond != nil
        rate = limit?.requestsPerSecond
        burst = limit.map(\.burst)
        cap = limit?.concurrency
        openAfter = limit?.openAfter
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
        !isPaused(at: now) && window == nil && rate == nil && cap == nil && openAfter == nil && failures == 0 && openUntil == nil
    }

    /// Whether the origin's circuit is open.
    package var isOpen: Bool { openUntil != nil }

    /// What a recorded answer did to the origin's circuit.
    package enum CircuitChange: Sendable, Hashable {
        case opened, closed
    }

    /// One more answer that says the server is unwell: the circuit opens at the threshold; a
    /// failed probe puts the next one twice as far off. `jitter` (in `0..<1`) moves the probe's
    /// time by up to a fifth of its wait either way (0.5: not at all), so that the probes of
    /// queues that met the same outage do not go in step.
    private mutating func fail(_ failure: String, probe: Bool, now: Double, wall: Double, jitter: Double, settings: FlowSettings) -> CircuitChange? {
        failures += 1
        lastFailure = failure
        let wait: Double
        let wasOpen = isOpen
        if wasOpen {
            guard probe else { return nil }
            wait = min(settings.maxProbeInterval, (probeWait ?? settings.probeInterval) * 2)
        } else {
            let threshold = openAfter ?? settings.openAfter
            guard threshold > 0, failures >= threshold else { return nil }
            wait = settings.probeInterval
            openedAt = wall
        }
        probeWait = wait
        let jittered = wait * (0.8 + 0.4 * jitter)
        openUntil = now + jittered
        openUntilWall = wall + jittered
        return wasOpen ? nil : .opened
    }

    /// What an operator's resume lifts: the pause, the shrunk window, the open circuit (the
    /// limit stays).
    package mutating func resume() {
        pausedUntil = nil
        pausedUntilWall = nil
        pauseStatus = nil
        window = nil
        successes = 0
        close()
        lastFailure = nil
    }

    /// The row as an operator sees it at `now` (a reading of the store's clock, which
    /// `wallTime` turns into a wall time), with `inflight` of its entries in flight.
    package func status(at now: Double, inflight: Int, wallTime: (Double) -> Date) -> FlowControl.OriginStatus {
        let paused = isPaused(at: now)
        return FlowControl.OriginStatus(
            origin: origin, pausedUntil: paused ? pausedUntil.map(wallTime) : nil, pauseStatus: paused ? pauseStatus : nil,
            concurrency: window, limit: limit, inflight: inflight, circuit: circuit(wallTime), failures: failures
        )
    }

    /// The open circuit as an operator sees it, `wallTime` turning a reading of the store's
    /// clock into a wall time; `nil` when closed.
    package func circuit(_ wallTime: (Double) -> Date) -> FlowControl.OriginStatus.Circuit? {
        guard let openUntil else { return nil }
        return FlowControl.OriginStatus.Circuit(
            openedAt: Date(timeIntervalSince1970: openedAt ?? 0), nextProbeAt: wallTime(openUntil), failures: failures, lastError: lastFailure
        )
    }

    /// Closes the circuit (a probe was delivered, or an operator closed it).
    package mutating func close() {
        failures = 0
        openUntil = nil
        openUntilWall = nil
        probeWait = nil
        openedAt = nil
    }

    /// Applies what an answer said (`inflight`: the origin's entries in flight before it ended,
    /// this one counted); returns what it did to the circuit.
    @discardableResult
    package mutating func record(
        _ signal: FlowSignal, now: Double, wall: Double, inflight: Int, settings: FlowSettings, jitter: Double = 0.5
    ) -> CircuitChange? {
        switch signal {
        case .unwell(let failure, let probe):
            return fail(failure, probe: probe, now: now, wall: wall, jitter: jitter, settings: settings)
        case .pause(let duration, let status):
            let length = min(max(0, duration.seconds), settings.maxPause)
            if (pausedUntil ?? -.infinity) < now + length {
                pausedUntil = now + length
                pausedUntilWall = wall + length
                pauseStatus = status
            }
        case .overload(let status):
            let base = window ?? max(1, min(inflight, cap ?? .max))
            window = max(1, base / 2)
            successes = 0
            // A 503 says the server is unavailable: it counts towards the circuit too.
            if status == 503 { return fail("HTTP 503", probe: false, now: now, wall: wall, jitter: jitter, settings: settings) }
        case .success:
            let wasOpen = isOpen
            close()
            lastFailure = nil
            if let current = window {
                successes += 1
                if successes >= settings.growAfter {
                    successes = 0
                    let grown = current + 1
                    window = grown >= min(settings.ceiling, cap ?? .max) ? nil : grown
                }
            }
            return wasOpen ? .closed : nil
        }
        return nil
    }
}
