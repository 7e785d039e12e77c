import Foundation
import HTTPCore
public import Logging
public import Metrics

/// How an ``OfflineQueue`` reports through swift-metrics (see "Metrics" in
/// `Docs/OfflineQueue.md` for every name and label).
///
/// ```swift
/// MetricsSystem.bootstrap(PrometheusMetricsFactory())   // once, at start
/// var configuration = QueueConfiguration(path: "/var/lib/myapp/queue.db")
/// configuration.metrics.prefix = "myapp_queue"           // courier_queue unless changed
/// configuration.metrics.endpointLimit = 50               // names past 50 report as `other`
/// ```
public struct QueueMetricsOptions: Sendable {
    /// Whether the queue reports at all. `true` unless changed; without a bootstrapped
    /// `MetricsSystem` (or a ``factory``) there is nothing to report to, and the queue skips its
    /// reports.
    public var isEnabled: Bool
    /// The start of every metric's name.
    public var prefix: String
    /// The factory metrics are made by; the bootstrapped `MetricsSystem`'s when `nil`, looked up
    /// at each report until a metric's handle is made (then kept), so a queue opened before the
    /// bootstrap still reports.
    public var factory: (any MetricsFactory)?
    /// How often ``QueueService`` reads the counts into the gauges besides at the end of each
    /// drain.
    public var gaugeInterval: Duration
    /// How many distinct entry names the queue reports in the `endpoint` label, 200 unless
    /// changed: the first names it meets, in any metric, are reported as they are, and every
    /// later one as `other`, so that names with ids in them (`POST /orders/42`) cannot make a
    /// series per entry. Each metric then has at most this many `endpoint` values, plus `other`.
    public var endpointLimit: Int
    /// Where the queue says, once, that ``endpointLimit`` was reached; a logger labelled
    /// `courier.queue` from the bootstrapped `LoggingSystem` when `nil`.
    public var logger: Logger?

    /// Options that report as `courier_queue_*` through the bootstrapped `MetricsSystem`, read the
    /// gauges every 5 seconds and label at most 200 endpoint names, unless told otherwise.
    public init(
        isEnabled: Bool = true, prefix: String = "courier_queue", factory: (any MetricsFactory)? = nil, gaugeInterval: Duration = .seconds(5),
        endpointLimit: Int = 200, logger: Logger? = nil
    ) {
        self.isEnabled = isEnabled
        self.prefix = prefix
        self.factory = factory
        self.gaugeInterval = gaugeInterval
        self.endpointLimit = endpointLimit
        self.logger = logger
    }

    /// Histogram buckets suited to `<prefix>_enqueue_to_delivery_seconds`, whose values run from
    /// milliseconds (sent at once) to days (a long outage): for a backend that asks for them,
    /// such as swift-prometheus's `PrometheusMetricsFactory.durationHistogramBuckets`.
    public static let enqueueToDeliveryBuckets: [Duration] = [
        .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5), .seconds(15), .seconds(60), .seconds(300),
        .seconds(900), .seconds(3600), .seconds(6 * 3600), .seconds(86_400), .seconds(7 * 86_400),
    ]
}

/// The queue's metric handles, made at their first use and kept: asking the factory takes its
/// lock, which costs more than recording. A handle is found by a small key (the metric, the
/// endpoint, the status class), so a report builds no strings. Nothing here touches the
/// database; the gauges are set from counts read elsewhere (the end of a drain, the service's
/// refresh).
///
/// The `endpoint` label is bounded (``QueueMetricsOptions/endpointLimit``): a name is admitted
/// when its first handle is made, so a report whose handle is kept costs what it did without
/// the bound; only a name past the limit, which has no handle of its own, is looked up again
/// each time (and then finds `other`'s). Handles are kept for admitted names only, so the
/// handles stay as few as the series.
final class QueueMetrics: Sendable {
    let options: QueueMetricsOptions
    private let counters = LockedBox<[Key: Counter]>([:])
    private let timers = LockedBox<[Key: Metrics.Timer]>([:])
    private let gauges = LockedBox<[String: Gauge]>([:])
    /// The origin gauges, by name and origin, and the origins they were last set for.
    private let originGauges = LockedBox<[String: Gauge]>([:])
    private let originsShown = LockedBox<Set<String>>([])
    private let queries = LockedBox<[CountQuery: Counter]>([:])
    private let endpoints: BoundedLabel

    private enum Metric: String {
        case enqueued = "enqueued_total"
        case attemptDuration = "attempt_duration_seconds"
        case delivered = "delivered_total"
        case enqueueToDelivery = "enqueue_to_delivery_seconds"
        case retried = "retried_total"
        case deadLettered = "dead_lettered_total"
        /// Answers that were conflicts (``StatusMeaning/conflict``), left or dropped.
        case conflicts = "conflicts_total"
    }

    private struct Key: Hashable {
        var metric: Metric
        var endpoint: String
        /// `statusClasses`' index; -1 for a metric without the label.
        var statusClass: Int8 = -1
        var reason: EntryLifecycle.DeadReason?

        /// The labels, in the order they are reported.
        var dimensions: [(String, String)] {
            var dimensions = [("endpoint", endpoint)]
            if statusClass >= 0 { dimensions.append(("status_class", QueueMetrics.statusClasses[Int(statusClass)])) }
            if let reason { dimensions.append(("reason", reason.rawValue)) }
            return dimensions
        }
    }

    init(_ options: QueueMetricsOptions) {
        self.options = options
        self.endpoints = BoundedLabel(limit: options.endpointLimit)
    }

    private var factory: any MetricsFactory { options.factory ?? MetricsSystem.factory }

    /// Whether a report reaches a backend: the options enable reports, and the factory is not
    /// swift-metrics' no-op one (what `MetricsSystem` gives before its bootstrap). Asked at each
    /// report, so a queue opened before the bootstrap reports from then on; until then nothing
    /// is looked up or recorded, so a drain that reports into nothing pays for no lookups.
    var isRecording: Bool {
        options.isEnabled && !(factory is NOOPMetricsHandler)
    }

    private func counter(_ key: Key) -> Counter {
        if let found = counters.withLock({ $0[key] }) { return found }
        let key = bounded(key)
        return Self.handle(key, in: counters) { Counter(label: options.prefix + "_" + key.metric.rawValue, dimensions: key.dimensions, factory: factory) }
    }

    private func timer(_ key: Key) -> Metrics.Timer {
        if let found = timers.withLock({ $0[key] }) { return found }
        let key = bounded(key)
        return Self.handle(key, in: timers) { Metrics.Timer(label: options.prefix + "_" + key.metric.rawValue, dimensions: key.dimensions, factory: factory) }
    }

    /// `key` with its endpoint admitted to the label's values, or turned into `other`; the
    /// first name turned away is logged, once for the queue's lifetime.
    private func bounded(_ key: Key) -> Key {
        let (endpoint, firstRefusal) = endpoints.admit(key.endpoint)
        if firstRefusal {
            let logger = options.logger ?? Logger(label: "courier.queue")
            logger.warning("more entry names than the metrics' endpoint limit: the rest are reported as endpoint=\(BoundedLabel.other)", metadata: [
                "limit": "\(endpoints.limit)", "endpoint": "\(key.endpoint)", "metric": "\(options.prefix)_\(key.metric.rawValue)",
                "hint": "name entries by route, not by concrete path",
            ])
        }
        guard endpoint != key.endpoint else { return key }
        var other = key
        other.endpoint = endpoint
        return other
    }

    private func gauge(_ name: String) -> Gauge {
        Self.handle(name, in: gauges) { Gauge(label: options.prefix + "_" + name, dimensions: [], factory: factory) }
    }

    /// The handle kept for `key`, made by `make` the first time, under the lock: two callers
    /// racing for a new key ask the factory once between them (the factory's own lock is taken
    /// inside ours, never the other way round).
    private static func handle<Name: Hashable, Handle>(_ key: Name, in kept: LockedBox<[Name: Handle]>, make: () -> Handle) -> Handle {
        kept.withLock { handles in
            if let found = handles[key] { return found }
            let made = make()
            handles[key] = made
            return made
        }
    }

    private static let statusClasses = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"]

    /// `statusClasses`' index for a status: its hundreds, or 0 (`none`) when there was no response.
    private static func statusClassIndex(_ status: Int?) -> Int8 {
        guard let status, (100...599).contains(status) else { return 0 }
        return Int8(status / 100)
    }

    /// Entries stored, by endpoint name.
    func enqueued(_ names: some Sequence<String>) {
        guard isRecording else { return }
        for name in names { counter(Key(metric: .enqueued, endpoint: name)).increment() }
    }

    /// One send, from the request going out to its answer (or failure).
    func attempted(_ name: String, duration: Duration) {
        guard isRecording else { return }
        timer(Key(metric: .attemptDuration, endpoint: name)).recordSeconds(max(0, duration.seconds))
    }

    /// A recorded transition of an entry named `name`, enqueued at `createdAt`.
    func recorded(_ transition: EntryLifecycle.Transition, name: String, createdAt: Date, now: Date) {
        guard isRecording else { return }
        switch transition {
        case .deliver(let status):
            counter(Key(metric: .delivered, endpoint: name, statusClass: Self.statusClassIndex(status))).increment()
            // Across processes only the wall clock relates the two moments: never below zero.
            timer(Key(metric: .enqueueToDelivery, endpoint: name)).recordSeconds(max(0, now.timeIntervalSince(createdAt)))
        case .retry(let retry) where !retry.waitingForNetwork:
            counter(Key(metric: .retried, endpoint: name, statusClass: Self.statusClassIndex(retry.status))).increment()
        case .deadLetter(let dead):
            counter(Key(metric: .deadLettered, endpoint: name, statusClass: Self.statusClassIndex(dead.status), reason: dead.reason)).increment()
        case .conflict(let conflict), .drop(let conflict):
            counter(Key(metric: .conflicts, endpoint: name, statusClass: Self.statusClassIndex(conflict.status))).increment()
        case .retry, .release:
            break   // a wait for the network, or a stop: not a retry
        }
    }

    /// The count queries the store answers: what status lines, gauges and console viewers cost it.
    enum CountQuery: String {
        /// The counts by state, the oldest pending entry and the next due time.
        case counts
        /// Entries by group, name and state among the newest, for an overview.
        case tally
    }

    /// One count query answered by the store, for whichever reader in this process asked (a
    /// shared read counts once however many readers it served).
    func answered(_ query: CountQuery) {
        guard isRecording else { return }
        Self.handle(query, in: queries) {
            Counter(label: options.prefix + "_count_queries_total", dimensions: [("query", query.rawValue)], factory: factory)
        }.increment()
    }

    /// `<prefix>_circuit_changes_total{origin, change}`: a circuit opened or closed
    /// (``OriginHealth``), counted by the drainer whose commit did it (so once for the fleet).
    func circuitOpened(origin: String) { circuitChanged(origin: origin, change: "opened") }
    func circuitClosed(origin: String) { circuitChanged(origin: origin, change: "closed") }

    private func circuitChanged(origin: String, change: String) {
        guard isRecording else { return }
        // Rare (an outage's start and end): a handle made each time costs nothing that matters.
        Counter(label: options.prefix + "_circuit_changes_total", dimensions: [("origin", origin), ("change", change)], factory: factory).increment()
    }

    /// The origins' gauges (`courier_queue_origin_paused_seconds{origin}`: what is left of a
    /// `Retry-After` pause; `_origin_concurrency{origin}`: the concurrency 429s and 503s shrank
    /// it to, 0 when not shrunk; `_origin_circuit_open{origin}`: 1 while its circuit is open;
    /// `_origin_failures{origin}`: the answers in a row that said its server is unwell), from
    /// flows read at `now`. An origin no longer held reads 0.
    func update(_ flows: [FlowControl.OriginStatus], now: Date) {
        guard isRecording else { return }
        let current = Set(flows.map(\.origin))
        let gone = originsShown.withLock { shown -> Set<String> in
            defer { shown = current }
            return shown.subtracting(current)
        }
        for flow in flows {
            originGauge("origin_paused_seconds", flow.origin).record(flow.pausedUntil.map { max(0, $0.timeIntervalSince(now)) } ?? 0)
            originGauge("origin_concurrency", flow.origin).record(flow.concurrency ?? 0)
            originGauge("origin_circuit_open", flow.origin).record(flow.circuit == nil ? 0 : 1)
            originGauge("origin_failures", flow.origin).record(flow.failures)
        }
        for origin in gone {
            originGauge("origin_paused_seconds", origin).record(0)
            originGauge("origin_concurrency", origin).record(0)
            originGauge("origin_circuit_open", origin).record(0)
            originGauge("origin_failures", origin).record(0)
        }
    }

    private func originGauge(_ name: String, _ origin: String) -> Gauge {
        Self.handle(name + " " + origin, in: originGauges) {
            Gauge(label: options.prefix + "_" + name, dimensions: [("origin", origin)], factory: factory)
        }
    }

    /// The gauges, from counts read at `now`.
    func update(_ counts: QueueCounts, now: Date) {
        guard isRecording else { return }
        gauge("pending").record(counts.pending)
        gauge("due").record(counts.due)
        gauge("inflight").record(counts.inflight)
        gauge("dead").record(counts.dead)
        gauge("blocked").record(counts.blocked)
        gauge("superseded").record(counts.superseded)
        gauge("conflict").record(counts.conflict)
        gauge("oldest_pending_age_seconds").record(counts.oldestPendingCreatedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0)
    }
}

extension OfflineQueue {
    /// Reads the counts into the gauges (`courier_queue_pending`, `_due`, `_inflight`, `_dead`,
    /// `_blocked`, `_oldest_pending_age_seconds`), and the origins flow control holds into
    /// `_origin_paused_seconds{origin}` and `_origin_concurrency{origin}`: the queue's state as the store holds it, whichever
    /// process did the work. A drain does this when it ends, and ``QueueService`` every
    /// ``QueueMetricsOptions/gaugeInterval``; call it yourself when you drain by hand and want
    /// the gauges fresh in between. The counts it reads are kept for the process's other
    /// readers (``recentCounts(maxAge:)``).
    public func updateMetrics() async throws(QueueError) {
        guard metrics.isRecording else { return }
        let counts = try await counts()
        operations.countsCache.offer(counts)
        metrics.update(counts, now: configuration.clock.now().wall)
        metrics.update(try await operations.originFlows(), now: configuration.clock.now().wall)
    }

    /// The gauges from counts no older than `maxAge`, shared with the process's other readers
    /// (a status line, a console): the service's refresh, at most one store query per `maxAge`.
    func refreshGauges(maxAge: Duration) async throws(QueueError) {
        guard metrics.isRecording else { return }
        metrics.update(try await recentCounts(maxAge: maxAge), now: configuration.clock.now().wall)
        // The origins held by flow control: a read of a table that is empty but for them.
        metrics.update(try await operations.originFlows(), now: configuration.clock.now().wall)
    }
}
