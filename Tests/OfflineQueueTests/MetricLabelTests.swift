import Foundation
import HTTPCore
import HTTPTypes
import InMemoryLogging
import Logging
import Metrics
import MetricsTestKit
import OfflineQueue
import Prometheus
import QueueTestSupport
import Testing
import TestSupport

/// The `endpoint` label stays of few values: entries given no name are named by method and
/// origin, and past `metrics.endpointLimit` names the rest count as `other`.
@Suite("Metrics: bounded endpoint labels")
struct MetricLabelTests {
    @Test("a name given is kept; none, or an endpoint's default, names the method and the origin, never the path")
    func defaultNames() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let origin = "http://127.0.0.1:\(server.port)"

        func name(_ ticket: Ticket) async throws -> String? { try await queue.entry(ticket.id)?.name }
        #expect(try await name(queue.enqueue(method: "POST", url: server.url("/orders/42?page=1").absoluteString)) == "POST \(origin)")
        #expect(try await name(queue.enqueue(method: "POST", url: server.url("/orders/42").absoluteString, name: "POST /orders/{id}")) == "POST /orders/{id}")
        #expect(try await name(queue.enqueue(Request<Data>.put("/orders/43"))) == "PUT \(origin)", "the library's default name")
        #expect(try await name(queue.enqueue(Named.order(44))) == "DELETE /orders/{id}", "an endpoint's own name")
        let client = APIClient(configuration: ClientConfiguration(baseURL: server.baseURL), transport: sharedTransport)
        let prepared = try client.request(for: Request<Data>.post("/orders/45/items"))
        #expect(try await name(queue.enqueue(prepared)) == "POST \(origin)")
        #expect(try await name(queue.enqueue(prepared, name: "add item")) == "add item")
        #expect(try await name(queue.enqueue([QueuedRequest(method: "GET", url: "https://API.example.com:443/a/b")])[0]) == "GET https://api.example.com")
        #expect(try await name(queue.enqueue([QueuedRequest(method: "GET", url: "http://[::1]:8080/a")])[0]) == "GET http://[::1]:8080")
        await queue.close()
        await server.shutdown()
    }

    @Test("past the limit every new name counts as other, in every metric; one warning, once")
    func cap() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let metrics = TestMetrics()
        let logs = InMemoryLogHandler()
        let queue = try makeQueue(path: folder.databasePath, server: server) {
            $0.metrics.factory = metrics
            $0.metrics.endpointLimit = 3
            $0.metrics.logger = Logger(label: "test") { _ in logs }
        }
        // Names with an id each, as an earlier Courier's default names were.
        let requests = (0..<8).map { index in
            QueuedRequest(method: "POST", url: server.url("/echo/\(index)").absoluteString, name: "POST /echo/\(index)")
        }
        _ = try await queue.enqueue(Array(requests[..<5]))
        _ = try await queue.enqueue(Array(requests[5...]))
        #expect(try await queue.drain().delivered == 8)

        for label in ["courier_queue_enqueued_total", "courier_queue_delivered_total"] {
            let endpoints = metrics.counters.filter { $0.label == label }.compactMap { counter in
                counter.dimensions.first { $0.0 == "endpoint" }?.1
            }
            #expect(Set(endpoints) == ["POST /echo/0", "POST /echo/1", "POST /echo/2", "other"], "\(label)")
        }
        #expect(try metrics.expectCounter("courier_queue_enqueued_total", [("endpoint", "other")]).totalValue == 5)
        #expect(try metrics.expectCounter("courier_queue_delivered_total", [("endpoint", "other"), ("status_class", "2xx")]).totalValue == 5)
        #expect(try metrics.expectTimer("courier_queue_attempt_duration_seconds", [("endpoint", "other")]).values.count == 5)
        #expect(try metrics.expectCounter("courier_queue_enqueued_total", [("endpoint", "POST /echo/1")]).totalValue == 1)

        #expect(logs.entries.map(\.level) == [.warning], "\(logs.entries)")
        #expect(logs.entries.first?.metadata["limit"] == "3" && logs.entries.first?.metadata["endpoint"] == "POST /echo/3", "\(logs.entries)")
        await queue.close()
        await server.shutdown()
    }

    @Test("10,000 entries to distinct paths: /metrics stays a few hundred series; names past the limit add none")
    func tenThousandPaths() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["courier_queue_enqueue_to_delivery_seconds"] = QueueMetricsOptions.enqueueToDeliveryBuckets
        let logs = InMemoryLogHandler()
        let queue = try makeQueue(path: folder.databasePath, server: server, concurrency: 16) {
            $0.metrics.factory = factory
            $0.metrics.logger = Logger(label: "test") { _ in logs }
        }
        let origin = "POST http://127.0.0.1:\(server.port)"
        func scrape() -> Scrape { Scrape(registry.emitToString()) }

        // The issue's queue: a request per order, given no name; as text in one transaction,
        // and as endpoints with the library's default name.
        _ = try await queue.enqueue((0..<8_000).map { QueuedRequest(method: "POST", url: server.url("/echo/orders/\($0)").absoluteString) })
        for index in 0..<1_000 { _ = try await queue.enqueue(Request<Data>.post("/echo/items/\(index)")) }
        #expect(try await drainUntilSettled(queue).delivered == 9_000)
        let defaults = scrape()
        #expect(defaults.series.count < 100, "\(defaults.series.count) series")
        #expect(defaults.endpoints(of: "courier_queue_delivered_total") == [origin])
        #expect(defaults.sum("courier_queue_delivered_total") == 9_000)

        // A name per entry (a database written by an earlier Courier holds such names): the
        // first 200 names, the origin's among them, are series of their own, the rest `other`.
        let legacy = { (range: Range<Int>) in
            range.map { QueuedRequest(method: "POST", url: server.url("/echo/legacy/\($0)").absoluteString, name: "POST /echo/legacy/\($0)") }
        }
        _ = try await queue.enqueue(legacy(0..<500))
        #expect(try await drainUntilSettled(queue).delivered == 500)
        let capped = scrape()
        for family in ["courier_queue_enqueued_total", "courier_queue_delivered_total", "courier_queue_attempt_duration_seconds_count"] {
            let endpoints = capped.endpoints(of: family)
            #expect(endpoints.count == 201 && endpoints.contains("other") && endpoints.contains(origin), "\(family): \(endpoints.count)")
        }
        #expect(capped.sum("courier_queue_delivered_total") == 9_500)

        _ = try await queue.enqueue(legacy(500..<1_000))
        #expect(try await drainUntilSettled(queue).delivered == 500)
        let after = scrape()
        #expect(after.series == capped.series, "500 more names, no new series")
        #expect(after.sum("courier_queue_delivered_total") == 10_000)
        #expect(logs.entries.map(\.level) == [.warning], "\(logs.entries.prefix(3))")
        await queue.close()
        await server.shutdown()
    }
}

/// An endpoint with a name of its own.
private enum Named: Endpoint {
    case order(Int)

    var path: String {
        switch self {
        case .order(let id): "/orders/\(id)"
        }
    }
    var method: HTTPRequest.Method { .delete }
    var name: String { "DELETE /orders/{id}" }
}

/// Prometheus's text format, as series: a sample line's name and labels (its value apart).
private struct Scrape {
    var series: Set<String> = []
    var samples: [(name: String, labels: String, value: Double)] = []

    init(_ text: String) {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let head = line[..<space]
            series.insert(String(head))
            let brace = head.firstIndex(of: "{") ?? head.endIndex
            samples.append((String(head[..<brace]), String(head[brace...]), value))
        }
    }

    /// The values of the `endpoint` label among `name`'s series.
    func endpoints(of name: String) -> Set<String> {
        Set(samples.filter { $0.name == name }.compactMap { sample in
            guard let start = sample.labels.range(of: "endpoint=\"") else { return nil }
            return String(sample.labels[start.upperBound...].prefix { $0 != "\"" })
        })
    }

    /// The sum of `name`'s samples.
    func sum(_ name: String) -> Double {
        samples.filter { $0.name == name }.reduce(0) { $0 + $1.value }
    }
}
