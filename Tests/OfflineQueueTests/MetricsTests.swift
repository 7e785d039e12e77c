import Foundation
import HTTPCore
import Metrics
import MetricsTestKit
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// What the queue reports through swift-metrics, read back from swift-metrics' test factory.
@Suite("Metrics: counters, timers and gauges")
struct MetricsTests {
    @Test("enqueued, delivered, retried and dead-lettered by endpoint and status class; both timers; gauges from the counts")
    func reports() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        scriptFailures(server, "/flaky", [(status: 503, headers: [])])
        let metrics = TestMetrics()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.metrics.factory = metrics }
        for index in 0..<2 { _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=\(index)").absoluteString, name: "POST /echo") }
        _ = try await queue.enqueue(method: "POST", url: server.url("/status/404").absoluteString, name: "POST /status/404")
        _ = try await queue.enqueue(method: "POST", url: server.url("/flaky").absoluteString, name: "POST /flaky")
        // Deduplicated: stored once, counted once.
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=0").absoluteString, name: "POST /echo", options: EnqueueOptions(idempotencyKey: "k"))
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=0").absoluteString, name: "POST /echo", options: EnqueueOptions(idempotencyKey: "k"))
        #expect(try metrics.expectCounter("courier_queue_enqueued_total", [("endpoint", "POST /echo")]).totalValue == 3)
        #expect(try metrics.expectCounter("courier_queue_enqueued_total", [("endpoint", "POST /flaky")]).totalValue == 1)

        let summary = try await drainUntilSettled(queue)
        #expect(summary.delivered == 4 && summary.dead == 1 && summary.failed == 1)
        let delivered = try metrics.expectCounter("courier_queue_delivered_total", [("endpoint", "POST /echo"), ("status_class", "2xx")])
        #expect(delivered.totalValue == 3)
        #expect(try metrics.expectCounter("courier_queue_delivered_total", [("endpoint", "POST /flaky"), ("status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_queue_retried_total", [("endpoint", "POST /flaky"), ("status_class", "5xx")]).totalValue == 1)
        let dead = try metrics.expectCounter(
            "courier_queue_dead_lettered_total", [("endpoint", "POST /status/404"), ("status_class", "4xx"), ("reason", "rejected")]
        )
        #expect(dead.totalValue == 1)
        let waited = try metrics.expectTimer("courier_queue_enqueue_to_delivery_seconds", [("endpoint", "POST /echo")])
        #expect(waited.values.count == 3 && waited.values.allSatisfy { $0 >= 0 })
        #expect(try metrics.expectTimer("courier_queue_attempt_duration_seconds", [("endpoint", "POST /flaky")]).values.count == 2)

        #expect(try metrics.expectGauge("courier_queue_pending").lastValue == 0)
        #expect(try metrics.expectGauge("courier_queue_inflight").lastValue == 0)
        #expect(try metrics.expectGauge("courier_queue_dead").lastValue == 1)
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=9").absoluteString, name: "POST /echo")
        #expect(try metrics.expectGauge("courier_queue_pending").lastValue == 0, "an enqueue reads no counts")
        try await queue.updateMetrics()
        #expect(try metrics.expectGauge("courier_queue_pending").lastValue == 1)
        #expect(try metrics.expectGauge("courier_queue_oldest_pending_age_seconds").lastValue.map { $0 >= 0 } == true)
        await server.shutdown()
    }

    @Test("an origin a 429 with Retry-After paused: a gauge by origin with what is left of the pause, 0 once an operator lifts it")
    func originGauges() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        server.route("/busy") { _, writer in
            try await writer.respond(status: 429, headers: [HeaderField(name: "Retry-After", value: "600")])
        }
        let metrics = TestMetrics()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.metrics.factory = metrics }
        _ = try await queue.enqueue(method: "POST", url: server.url("/busy").absoluteString)
        _ = try await queue.drain()
        try await queue.updateMetrics()
        let origin = server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let paused = try metrics.expectGauge("courier_queue_origin_paused_seconds", [("origin", origin)]).lastValue
        #expect(paused.map { $0 > 500 && $0 <= 600 } == true, "\(String(describing: paused))")
        #expect(try metrics.expectGauge("courier_queue_origin_concurrency", [("origin", origin)]).lastValue == 0)
        #expect(try await queue.resume(origin: origin))
        try await queue.updateMetrics()
        #expect(try metrics.expectGauge("courier_queue_origin_paused_seconds", [("origin", origin)]).lastValue == 0, "an origin no longer held reads 0")
        await server.shutdown()
    }

    @Test("a prefix of one's own; metrics turned off report nothing")
    func options() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let metrics = TestMetrics()
        let queue = try makeQueue(path: folder.databasePath, server: server) {
            $0.metrics.factory = metrics
            $0.metrics.prefix = "app_outbox"
        }
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, name: "POST /echo")
        _ = try await queue.drain()
        #expect(try metrics.expectCounter("app_outbox_delivered_total", [("endpoint", "POST /echo"), ("status_class", "2xx")]).totalValue == 1)

        let silent = TestMetrics()
        let off = try makeQueue(path: folder.databasePath, server: server) {
            $0.metrics = QueueMetricsOptions(isEnabled: false, factory: silent)
        }
        _ = try await off.enqueue(method: "POST", url: server.url("/echo").absoluteString, name: "POST /echo")
        _ = try await off.drain()
        try await off.updateMetrics()
        #expect(silent.counters.isEmpty && silent.timers.isEmpty && silent.recorders.isEmpty)
        await server.shutdown()
    }

    @Test("without a backend nothing is looked up or kept; reports start when one is there")
    func backendLater() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        // No factory of its own: the queue reports to whatever `MetricsSystem` gives, which in
        // this process is the no-op factory (nothing bootstraps it).
        let queue = try makeQueue(path: folder.databasePath, server: server)
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, name: "POST /echo")
        #expect(try await queue.drain().delivered == 1)
        try await queue.updateMetrics()
        // A backend from now on (task-local here; a bootstrap in a program): reports reach it.
        // Handles made while there was none would keep reporting into nothing.
        let metrics = TestMetrics()
        try await withMetricsFactory(metrics) {
            _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, name: "POST /echo")
            #expect(try await queue.drain().delivered == 1)
        }
        #expect(try metrics.expectCounter("courier_queue_enqueued_total", [("endpoint", "POST /echo")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_queue_delivered_total", [("endpoint", "POST /echo"), ("status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectTimer("courier_queue_attempt_duration_seconds", [("endpoint", "POST /echo")]).values.count == 1)
        await server.shutdown()
    }

    @Test("each handle is made once and kept: the factory is asked once per metric and labels")
    func handlesKept() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let metrics = CountingFactory(TestMetrics())
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.metrics.factory = metrics }
        for index in 0..<5 { _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=\(index)").absoluteString, name: "POST /echo") }
        #expect(try await queue.drain().delivered == 5)
        for _ in 0..<3 { try await queue.updateMetrics() }
        // enqueued_total, delivered_total and count_queries_total{query="counts"} (read three
        // times and at the drain's end); attempt_duration and enqueue_to_delivery; the eight
        // gauges (swift-metrics makes a gauge as a recorder).
        #expect(metrics.made.current == ["counter": 3, "timer": 2, "recorder": 8])
        #expect(try metrics.base.expectCounter("courier_queue_count_queries_total", [("query", "counts")]).totalValue >= 3)
        #expect(try metrics.base.expectCounter("courier_queue_delivered_total", [("endpoint", "POST /echo"), ("status_class", "2xx")]).totalValue == 5)
        await server.shutdown()
    }
}

/// A factory that counts what it is asked to make, and hands the work to `base`.
private final class CountingFactory: MetricsFactory, Sendable {
    let base: TestMetrics
    let made = LockedBox<[String: Int]>([:])

    init(_ base: TestMetrics) { self.base = base }

    private func count(_ kind: String) { made.withLock { $0[kind, default: 0] += 1 } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        count("counter")
        return base.makeCounter(label: label, dimensions: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        count("floatingPointCounter")
        return base.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        count("meter")
        return base.makeMeter(label: label, dimensions: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        count("recorder")
        return base.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        count("timer")
        return base.makeTimer(label: label, dimensions: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { base.destroyFloatingPointCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}
