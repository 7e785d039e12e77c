public import HTTPCore
public import Metrics
public import Foundation
public import Logging
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
/// The `endpoint` label is the endpoint's `name`, kept to a bounded set of values, since a
/// backend keeps every series it was given for as long as it runs:
/// - path segments that are identifiers (all digits, a UUID, or 16 or more hex digits) read
///   `{id}`: `GET /users/42/avatar` is reported as `GET /users/{id}/avatar`
///   (``collapsesIdentifiers``);
/// - the first ``endpointLimit`` distinct names are reported as they are, every later one as
///   `other` (said once in the log).
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
    /// Whether identifier segments of a path read `{id}` in the `endpoint` label.
    public var collapsesIdentifiers: Bool
    /// How many distinct `endpoint` values are reported; later ones are reported as `other`.
    public var endpointLimit: Int
    /// Where the plugin says, once, that ``endpointLimit`` was reached; a logger labelled
    /// `courier.metrics` from the bootstrapped `LoggingSystem` when `nil`.
    public var logger: Logger?

    /// A plugin that records metrics named after `prefix` through `factory`, for endpoints in
    /// `scope`. `endpointLimit` (200 unless given) is fixed here: setting the property later
    /// changes only what the log says.
    public init(
        prefix: String = "courier_http", factory: (any MetricsFactory)? = nil, scope: PluginScope = .universal,
        collapsesIdentifiers: Bool = true, endpointLimit: Int = 200, logger: Logger? = nil
    ) {
        self.prefix = prefix
        self.factory = factory
        self.scope = scope
        self.collapsesIdentifiers = collapsesIdentifiers
        self.endpointLimit = endpointLimit
        self.logger = logger
        handles = MetricHandles(endpointLimit: endpointLimit)
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
        let endpoint = collapsesIdentifiers ? Self.collapsingIdentifiers(context.endpointName) : context.endpointName
        let handles = self.handles.metrics(for: endpoint, statusClass: statusClass, prefix: prefix, factory: factory) {
            (logger ?? Logger(label: "courier.metrics")).warning(
                "more endpoint names than the metrics' endpoint limit: the rest are reported as endpoint=\(BoundedLabel.other)",
                metadata: ["limit": "\(endpointLimit)", "first_refused": "\(endpoint)"]
            )
        }
        handles.requests.increment()
        handles.duration.recordNanoseconds((ContinuousClock.now - context.startedAt).nanoseconds)
        if let bytes { handles.bytes.record(bytes) }
    }

    static let statusClasses = ["0xx", "1xx", "2xx", "3xx", "4xx", "5xx", "error"]

    /// Metric handles made once per endpoint and status class: making a handle asks the
    /// factory (and its lock) every time, which costs more than recording.
    private let handles: MetricHandles

    /// `name` with each path segment that is an identifier (all digits, a UUID, or 16 or more
    /// hex digits) replaced by `{id}`; `name` itself, with nothing allocated, when it has none.
    package static func collapsingIdentifiers(_ name: String) -> String {
        var name = name
        return name.withUTF8 { bytes in
            guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")) else { return nil }
            var result: [UInt8]?
            var copied = 0
            var start = slash + 1
            for index in (slash + 1)...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                if isIdentifier(bytes[start..<index]) {
                    if result == nil { result = []; result?.reserveCapacity(bytes.count) }
                    result! += bytes[copied..<start]
                    result! += "{id}".utf8
                    copied = index
                }
                start = index + 1
            }
            guard var result else { return nil }
            result += bytes[copied...]
            return String(decoding: result, as: UTF8.self)
        } ?? name
    }

    private static func isIdentifier(_ segment: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard !segment.isEmpty else { return false }
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let isHex = { (byte: UInt8) in isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f")) }
        if segment.allSatisfy(isDigit) { return true }
        if segment.count >= 16, segment.allSatisfy(isHex) { return true }
        // A UUID: 8-4-4-4-12 hex digits.
        guard segment.count == 36 else { return false }
        for (offset, byte) in segment.enumerated() {
            let hyphen = offset == 8 || offset == 13 || offset == 18 || offset == 23
            guard hyphen ? byte == UInt8(ascii: "-") : isHex(byte) else { return false }
        }
        return true
    }
}

/// A cache of metric handles by endpoint and status class, for at most `endpointLimit`
/// endpoints and `other`: a name past the limit has no handles of its own.
final class MetricHandles: Sendable {
    struct Handles {
        let requests: Counter
        let duration: Timer
        let bytes: Recorder
    }

    /// By endpoint, then by index into ``MetricsPlugin/statusClasses``: no key string is built
    /// per call.
    private let cache = LockedBox<[String: [Handles?]]>([:])
    private let endpoints: BoundedLabel

    init(endpointLimit: Int) {
        endpoints = BoundedLabel(limit: endpointLimit)
    }

    /// The handles of `endpoint`, or of `other` past the limit; `refusedFirst` runs once, at
    /// the first name refused.
    func metrics(
        for endpoint: String, statusClass: Int, prefix: String, factory: (any MetricsFactory)?, refusedFirst: () -> Void
    ) -> Handles {
        if let found = cache.withLock({ $0[endpoint]?[statusClass] }) { return found }
        let (endpoint, firstRefusal) = endpoints.admit(endpoint)
        if firstRefusal { refusedFirst() }
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
