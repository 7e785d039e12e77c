import Foundation
import HTTPCore
public import Metrics

/// How an ``OfflineQueue`` reports through swift-metrics (see "Metrics" in
/// `Docs/OfflineQueue.md` for every name and label).
///
/// ```swift
/// MetricsSystem.bootstrap(PrometheusMetricsFactory())   // once, at start
/// var configuration = QueueConfiguration(path: "/var/lib/myapp/queue.db")
/// configuration.metrics.prefix = "myapp_queue"           // courier_queue unless changed
/// ```
public struct QueueMetricsOptions: Sendable {
    /// Whether the queue reports at all. `true` unless changed; without a bootstrapped
    /// `MetricsSystem` the reports go nowhere and cost little.
    public var isEnabled: Bool
    /// The start of every metric's name.
    public var prefix: String
    /// The factory metrics are made by; the bootstrapped `MetricsSystem`'s when `nil`, looked up
    /// at the first report, so a queue opened before the bootstrap still reports.
    public var factory: (any MetricsFactory)?
    /// How often ``QueueService`` reads the counts into the gauges besides at the end of each
    /// drain.
    public var gaugeInterval: Duration

    public init(isEnabled: Bool = true, prefix: String = "courier_queue", factory: (any MetricsFactory)? = nil, gaugeInterval: Duration = .seconds(5)) {
        self.isEnabled = isEnabled
        self.prefix = prefix
        self.factory = factory
        self.gaugeInterval = gaugeInterval
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
/// lock, which costs more than recording. Nothing here touches the database; the gauges are
/// set from counts read elsewhere (the end of a drain, the service's refresh).
final class QueueMetrics: Sendable {
    let options: QueueMetricsOptions
    private let counters = LockedBox<[String: Counter]>([:])
    private let timers = LockedBox<[String: Metrics.Timer]>([:])
    private let gauges = LockedBox<[String: Gauge]>([:])

    init(_ options: QueueMetricsOptions) {
        self.options = options
    }

    private var factory: any MetricsFactory { options.factory ?? MetricsSystem.factory }

    private static func key(_ name: String, _ dimensions: [(String, String)]) -> String {
        dimensions.reduce(name) { $0 + "\u{0}" + $1.0 + "=" + $1.1 }
    }

    private func counter(_ name: String, _ dimensions: [(String, String)]) -> Counter {
        let key = Self.key(name, dimensions)
        if let found = counters.withLock({ $0[key] }) { return found }
        let made = Counter(label: options.prefix + "_" + name, dimensions: dimensions, factory: factory)
        return counters.withLock { $0[key, default: made] }
    }

    private func timer(_ name: String, _ dimensions: [(String, String)]) -> Metrics.Timer {
        let key = Self.key(name, dimensions)
        if let found = timers.withLock({ $0[key] }) { return found }
        let made = Metrics.Timer(label: options.prefix + "_" + name, dimensions: dimensions, factory: factory)
        return timers.withLock { $0[key, default: made] }
    }

    private func gauge(_ name: String) -> Gauge {
        if let found = gauges.withLock({ $0[name] }) { return found }
        let made = Gauge(label: options.prefix + "_" + name, dimensions: [], factory: factory)
        return gauges.withLock { $0[name, default: made] }
    }

    /// `2xx`…`5xx` for a status, `none` when there was no response.
    static func statusClass(_ status: Int?) -> String {
        guard let status, (100...599).contains(status) else { return "none" }
        return "\(status / 100)xx"
    }

    /// Entries stored, by endpoint name.
    func enqueued(_ names: some Sequence<String>) {
        guard options.isEnabled else { return }
        for name in names { counter("enqueued_total", [("endpoint", name)]).increment() }
    }

    /// One send, from the request going out to its answer (or failure).
    func attempted(_ name: String, duration: Duration) {
        guard options.isEnabled else { return }
        timer("attempt_duration_seconds", [("endpoint", name)]).recordSeconds(max(0, duration.seconds))
    }

    /// A recorded transition of an entry named `name`, enqueued at `createdAt`.
    func recorded(_ transition: Transition, name: String, createdAt: Date, now: Date) {
        guard options.isEnabled else { return }
        switch transition {
        case .deliver(let status):
            counter("delivered_total", [("endpoint", name), ("status_class", Self.statusClass(status))]).increment()
            // Across processes only the wall clock relates the two moments: never below zero.
            timer("enqueue_to_delivery_seconds", [("endpoint", name)]).recordSeconds(max(0, now.timeIntervalSince(createdAt)))
        case .retry(let retry) where !retry.waitingForNetwork:
            counter("retried_total", [("endpoint", name), ("status_class", Self.statusClass(retry.status))]).increment()
        case .deadLetter(let dead):
            counter("dead_lettered_total", [
                ("endpoint", name), ("status_class", Self.statusClass(dead.status)), ("reason", dead.reason.rawValue),
            ]).increment()
        case .retry, .release:
            break   // a wait for the network, or a stop: not a retry
        }
    }

    /// The gauges, from counts read at `now`.
    func update(_ counts: QueueCounts, now: Date) {
        guard options.isEnabled else { return }
        gauge("pending").record(counts.pending)
        gauge("inflight").record(counts.inflight)
        gauge("dead").record(counts.dead)
        gauge("oldest_pending_age_seconds").record(counts.oldestPendingCreatedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0)
    }
}

extension OfflineQueue {
    /// Reads the counts into the gauges (`courier_queue_pending`, `_inflight`, `_dead`,
    /// `_oldest_pending_age_seconds`). A drain does this when it ends, and ``QueueService``
    /// every ``QueueMetricsOptions/gaugeInterval``; call it yourself when you drain by hand and
    /// want the gauges fresh in between.
    public func updateMetrics() async throws(QueueError) {
        guard metrics.options.isEnabled else { return }
        metrics.update(try await counts(), now: configuration.clock.now().wall)
    }
}
