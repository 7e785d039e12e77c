public import HTTPCore
public import Metrics
public import Foundation
import HTTPTypes

/// Records each call through swift-metrics: a counter per endpoint and status class, and a
/// timer per endpoint.
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `courier_http_requests_total` | counter | `endpoint`, `status_class` (`2xx`…`5xx`, or `error`) |
/// | `courier_http_request_duration` | timer | `endpoint` |
/// | `courier_http_response_bytes` | recorder | `endpoint` |
///
/// ```swift
/// MetricsSystem.bootstrap(PrometheusMetricsFactory(...))
/// configuration.plugins.append(MetricsPlugin())
/// ```
public struct MetricsPlugin: Plugin {
    /// Prefix of every metric label.
    public var prefix: String
    /// The factory metrics are made by; the global one when `nil`.
    public var factory: (any MetricsFactory)?
    public var scope: PluginScope

    public init(prefix: String = "courier_http", factory: (any MetricsFactory)? = nil, scope: PluginScope = .universal) {
        self.prefix = prefix
        self.factory = factory
        self.scope = scope
    }

    public func didReceive(_ result: Result<Response<Data>, NetworkError>, for request: PreparedRequest, context: CallContext) async {
        // Index into `statusClasses`: 0xx…5xx, then "error".
        let statusClass: Int
        var bytes: Int?
        switch result {
        case .success(let response):
            statusClass = min(max(response.status.code / 100, 0), 5)
            bytes = response.metrics.bytesReceived
        case .failure(let error):
            statusClass = error.status.map { min(max($0.code / 100, 0), 5) } ?? 6
        }
        let handles = self.handles.metrics(for: context.endpointName, statusClass: statusClass, prefix: prefix, factory: factory)
        handles.requests.increment()
        handles.duration.recordNanoseconds((ContinuousClock.now - context.startedAt).nanoseconds)
        if let bytes { handles.bytes.record(bytes) }
    }

    static let statusClasses = ["0xx", "1xx", "2xx", "3xx", "4xx", "5xx", "error"]

    /// Metric handles made once per endpoint and status class: making a handle asks the
    /// factory (and its lock) every time, which costs more than recording.
    private let handles = MetricHandles()
}

/// A cache of metric handles by endpoint and status class.
final class MetricHandles: Sendable {
    struct Handles {
        let requests: Counter
        let duration: Timer
        let bytes: Recorder
    }

    /// By endpoint, then by index into ``MetricsPlugin/statusClasses``: no key string is built
    /// per call.
    private let cache = LockedBox<[String: [Handles?]]>([:])

    func metrics(for endpoint: String, statusClass: Int, prefix: String, factory: (any MetricsFactory)?) -> Handles {
        if let found = cache.withLock({ $0[endpoint]?[statusClass] }) { return found }
        let endpointDimension = [("endpoint", endpoint)]
        let factory = factory ?? MetricsSystem.factory
        let made = Handles(
            requests: Counter(
                label: "\(prefix)_requests_total",
                dimensions: endpointDimension + [("status_class", MetricsPlugin.statusClasses[statusClass])], factory: factory
            ),
            duration: Timer(label: "\(prefix)_request_duration", dimensions: endpointDimension, factory: factory),
            bytes: Recorder(label: "\(prefix)_response_bytes", dimensions: endpointDimension, factory: factory)
        )
        cache.withLock { cache in
            var row = cache[endpoint] ?? Array(repeating: nil, count: MetricsPlugin.statusClasses.count)
            row[statusClass] = made
            cache[endpoint] = row
        }
        return made
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let parts = components
        let (whole, overflow) = parts.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole + parts.attoseconds / 1_000_000_000
    }
}
