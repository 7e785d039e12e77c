public import Foundation
public import OfflineQueueCore

/// The measured part of the growth benchmark (`courier-bench --growth`, Docs/Benchmarks.md)
/// and of its smoke test: enqueues one call at a time, a drain of a given number of entries,
/// the counts and the overview read, and retention applied while a drain runs, with the
/// longest pause that drain sees. Everything goes through the queue's public API, so the same
/// workload runs on every store; filling the queue and reading its size are the caller's.
///
/// ```swift
/// let workload = GrowthWorkload(queue: queue)
/// let enqueues = try await workload.enqueue(20_000) { QueuedRequest(method: "POST", url: url(for: $0)) }
/// let drain = try await workload.drain(10_000, concurrency: 16)
/// let retention = try await workload.retentionWhileDraining(now: later, concurrency: 16)
/// print(enqueues.rate, drain.rate, retention.longestPause)
/// ```
public struct GrowthWorkload: Sendable {
    /// The queue measured.
    public let queue: OfflineQueue

    /// A workload over `queue`.
    public init(queue: OfflineQueue) {
        self.queue = queue
    }

    /// How a run of operations went: how many, how long, and the spread of the single ones.
    public struct Timing: Sendable, Hashable {
        /// Operations done (enqueues made, entries delivered).
        public var count: Int
        /// Seconds from the first operation's start to the last one's end.
        public var seconds: Double
        /// The 99th percentile of one operation's time, in seconds: an enqueue call's, or an
        /// entry's from its attempt's start to its delivery.
        public var p99: Double
        /// The longest single operation (for a drain: the longest gap between two
        /// consecutive deliveries), in seconds.
        public var longest: Double

        /// Operations per second.
        public var rate: Double { seconds > 0 ? Double(count) / seconds : 0 }

        /// A timing with the figures given.
        public init(count: Int, seconds: Double, p99: Double, longest: Double) {
            self.count = count
            self.seconds = seconds
            self.p99 = p99
            self.longest = longest
        }
    }

    /// What retention did while a drain ran.
    public struct RetentionRun: Sendable, Hashable {
        /// What `OfflineQueue.applyRetention(now:)` removed.
        public var summary: RetentionSummary
        /// Seconds the retention call took.
        public var seconds: Double
        /// The longest gap, in seconds, between two consecutive deliveries of the drain that
        /// overlaps the retention call (from the last delivery before it to the first after).
        /// Negative when the drain delivered nothing around it (nothing was measured).
        public var longestPause: Double
        /// The longest gap between consecutive deliveries of the same drain in a window as long
        /// as the retention call, right after it: the drain's own rhythm on this machine, to
        /// compare `longestPause` with. Negative when the drain went idle before the window ended.
        public var longestPauseWithout: Double
        /// Entries the drain delivered while retention ran.
        public var deliveredDuring: Int
        /// Entries the drain delivered in all.
        public var delivered: Int
    }

    /// `count` calls of `OfflineQueue.enqueue(_:)`, one request each, one after the other;
    /// each call timed.
    public func enqueue(_ count: Int, request: (Int) -> QueuedRequest) async throws(QueueError) -> Timing {
        var times: [Double] = []
        times.reserveCapacity(count)
        let start = ContinuousClock.now
        for index in 0..<count {
            let began = ContinuousClock.now
            _ = try await queue.enqueue([request(index)])
            times.append((ContinuousClock.now - began).growthSeconds)
        }
        let seconds = (ContinuousClock.now - start).growthSeconds
        times.sort()
        return Timing(count: count, seconds: seconds, p99: Self.percentile(times, 0.99), longest: times.last ?? 0)
    }

    /// Drains at `concurrency` until `count` entries are delivered (or nothing is due), then
    /// stops claiming. The time runs from the drain's start to the `count`-th delivery (the
    /// counts the drain reads when it ends are not in it).
    public func drain(_ count: Int, concurrency: Int) async throws -> Timing {
        let recorder = DeliveryRecorder(stopAfter: count)
        let control = DrainControl()
        let events = queue.events(bufferingPolicy: .unbounded)
        let watcher = Task { await recorder.watch(events, control: control) }
        let start = ContinuousClock.now
        let summary: DrainSummary
        do {
            summary = try await queue.drain(concurrency: concurrency, control: control)
        } catch {
            watcher.cancel()
            throw error
        }
        let ended = ContinuousClock.now
        await recorder.waitFor(deliveries: summary.delivered)
        watcher.cancel()
        let record = recorder.snapshot()
        let deliveries = Array(record.deliveries.prefix(count))
        let last = deliveries.last ?? ended
        var latencies = record.latencies
        latencies.sort()
        return Timing(
            count: deliveries.count, seconds: (last - start).growthSeconds, p99: Self.percentile(latencies, 0.99),
            longest: Self.longestGap(in: [start] + deliveries)
        )
    }

    /// Starts a drain at `concurrency`, lets it deliver `warmup` entries, then calls
    /// `OfflineQueue.applyRetention(now:)` with `now` while the drain goes on, and stops the
    /// drain once retention returned, the drain delivered `after` more entries, and as long as
    /// the call took has passed again (or the drain went idle). The queue needs enough due
    /// entries to keep the drain busy throughout.
    public func retentionWhileDraining(now: Date, concurrency: Int, warmup: Int = 500, after: Int = 200) async throws -> RetentionRun {
        let recorder = DeliveryRecorder(stopAfter: .max)
        let control = DrainControl()
        let events = queue.events(bufferingPolicy: .unbounded)
        let watcher = Task { await recorder.watch(events, control: control) }
        let queue = self.queue
        let finished = GrowthLock(false)
        let drain = Task { () throws -> DrainSummary in
            defer { finished.withLock { $0 = true } }
            return try await queue.drain(concurrency: concurrency, control: control)
        }
        // The drain's own pace first.
        await recorder.waitFor(deliveries: warmup, orUntil: finished)
        let began = ContinuousClock.now
        let summary: RetentionSummary
        do {
            summary = try await queue.applyRetention(now: now)
        } catch {
            control.stop()
            _ = await drain.result
            watcher.cancel()
            throw error
        }
        let ended = ContinuousClock.now
        let before = recorder.snapshot().deliveries.count
        await recorder.waitFor(deliveries: before + after, orUntil: finished)
        // A window as long as the call, without it.
        let windowEnd = ended + (ended - began)
        while ContinuousClock.now < windowEnd, !finished.withLock({ $0 }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let windowFull = !finished.withLock { $0 }
        control.stop()
        let drained = try await drain.value
        await recorder.waitFor(deliveries: drained.delivered)
        watcher.cancel()
        let deliveries = recorder.snapshot().deliveries
        // The deliveries around the call: the last one before it, every one during it, the
        // first one after it.
        let lastBefore = deliveries.lastIndex { $0 < began }
        let firstAfter = deliveries.firstIndex { $0 > ended }
        let during = deliveries.filter { $0 >= began && $0 <= ended }
        var around: [ContinuousClock.Instant] = []
        if let lastBefore { around.append(deliveries[lastBefore]) }
        around += during
        if let firstAfter { around.append(deliveries[firstAfter]) }
        let measured = lastBefore != nil && firstAfter != nil
        // The same measure in the window after the call: the deliveries within it and the
        // first after it.
        var rhythm = deliveries.filter { $0 > ended && $0 <= windowEnd }
        if let next = deliveries.first(where: { $0 > windowEnd }) { rhythm.append(next) }
        return RetentionRun(
            summary: summary, seconds: (ended - began).growthSeconds,
            longestPause: measured ? Self.longestGap(in: around) : -1,
            longestPauseWithout: windowFull ? Self.longestGap(in: rhythm) : -1,
            deliveredDuring: during.count, delivered: drained.delivered
        )
    }

    /// `OfflineQueue.counts()` (what `sync stats` reads), and the seconds it took.
    public func counts() async throws(QueueError) -> (counts: QueueCounts, seconds: Double) {
        let start = ContinuousClock.now
        let counts = try await queue.counts()
        return (counts, (ContinuousClock.now - start).growthSeconds)
    }

    /// The console's overview (`OfflineQueue.overview(top:window:countsMaxAge:)`, read
    /// afresh), and the seconds it took.
    public func overview() async throws(QueueError) -> (overview: QueueOverview, seconds: Double) {
        let start = ContinuousClock.now
        let overview = try await queue.overview(countsMaxAge: .zero)
        return (overview, (ContinuousClock.now - start).growthSeconds)
    }

    /// The value at `fraction` (0 to 1) of `sorted`; 0 when it is empty.
    public static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
    }

    /// The longest gap between consecutive instants of `instants` (in order), in seconds.
    static func longestGap(in instants: [ContinuousClock.Instant]) -> Double {
        zip(instants, instants.dropFirst()).map { ($1 - $0).growthSeconds }.max() ?? 0
    }
}

/// The deliveries a drain makes, as its events tell them: when each happened, and each
/// entry's time from its attempt's start to its delivery.
private final class DeliveryRecorder: Sendable {
    struct Record {
        var deliveries: [ContinuousClock.Instant] = []
        var latencies: [Double] = []
        var started: [EntryID: ContinuousClock.Instant] = [:]
    }

    private let record = GrowthLock(Record())
    private let stopAfter: Int

    init(stopAfter: Int) {
        self.stopAfter = stopAfter
    }

    func watch(_ events: AsyncStream<QueueEvent>, control: DrainControl) async {
        for await event in events {
            let now = ContinuousClock.now
            switch event {
            case .attemptStarted(let id, _):
                record.withLock { $0.started[id] = now }
            case .delivered(let id, _):
                let count = record.withLock { record -> Int in
                    record.deliveries.append(now)
                    if let started = record.started.removeValue(forKey: id) { record.latencies.append((now - started).growthSeconds) }
                    return record.deliveries.count
                }
                if count >= stopAfter { control.stop() }
            default:
                break
            }
        }
    }

    func snapshot() -> Record { record.withLock { $0 } }

    /// Returns once `deliveries` deliveries were seen, or `finished` holds true (when given), or after
    /// 10 s without a new one.
    func waitFor(deliveries: Int, orUntil finished: GrowthLock<Bool>? = nil) async {
        var seen = -1, since = ContinuousClock.now
        while true {
            let count = record.withLock { $0.deliveries.count }
            if count >= deliveries { return }
            if count != seen { seen = count; since = .now }
            if ContinuousClock.now - since > .seconds(10) { return }
            if let finished, finished.withLock({ $0 }) { return }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
}

/// A lock around a value (Synchronization's `Mutex` needs macOS 15; this package supports 14).
private final class GrowthLock<Value>: @unchecked Sendable {
    // Every access to `value` holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

extension Duration {
    /// The duration in seconds.
    fileprivate var growthSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
