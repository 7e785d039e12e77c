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
        let endpoint = [("endpoint", context.endpointName)]
        let statusClass: String
        var bytes: Int?
        switch result {
        case .success(let response):
            statusClass = "\(response.status.code / 100)xx"
            bytes = response.metrics.bytesReceived
        case .failure(let error):
            statusClass = error.status.map { "\($0.code / 100)xx" } ?? "error"
        }
        let nanoseconds = (ContinuousClock.now - context.startedAt).nanoseconds
        if let factory {
            Counter(label: "\(prefix)_requests_total", dimensions: endpoint + [("status_class", statusClass)], factory: factory).increment()
            Timer(label: "\(prefix)_request_duration", dimensions: endpoint, factory: factory).recordNanoseconds(nanoseconds)
            if let bytes { Recorder(label: "\(prefix)_response_bytes", dimensions: endpoint, factory: factory).record(bytes) }
        } else {
            Counter(label: "\(prefix)_requests_total", dimensions: endpoint + [("status_class", statusClass)]).increment()
            Timer(label: "\(prefix)_request_duration", dimensions: endpoint).recordNanoseconds(nanoseconds)
            if let bytes { Recorder(label: "\(prefix)_response_bytes", dimensions: endpoint).record(bytes) }
        }
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
