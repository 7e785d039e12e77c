import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Benchmark
import Foundation
import HTTPCore
import NIOCore
import OfflineQueue

/// The SQLite queue: a durable enqueue beside a minimal raw insert of the same columns, and a
/// drain (16 at a time) beside raw POSTs of the same requests.
enum QueueScenarios {
    static let url = QueuePayload.url

    static func register() {
        Benchmark("durable-enqueue.raw-SQLite-insert") { benchmark, table in
            try await Measure.run(benchmark) {
                for index in benchmark.scaledIterations { try table.insert(index) }
            }
        } setup: {
            try MinimalTable(path: Folder.shared.path("raw-enqueue.db"))
        } teardown: {
            Folder.shared.remove("raw-enqueue.db")
        }
        Benchmark("durable-enqueue.Courier") { benchmark, queue in
            try await Measure.run(benchmark) {
                for index in benchmark.scaledIterations {
                    _ = try await queue.enqueue(method: "POST", url: url, headers: QueuePayload.headers, body: .data(QueuePayload.body(index)))
                }
            }
        } setup: {
            try OfflineQueue(
                configuration: QueueConfiguration(path: Folder.shared.path("enqueue.db"), durability: .full),
                client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport(client: Loopback.httpClient))
            )
        } teardown: {
            Folder.shared.remove("enqueue.db")
        }
        Benchmark("drain.raw-POSTs") { benchmark in
            let url = Loopback.baseURL.appendingPathComponent("events").absoluteString
            try await Measure.run(benchmark) {
                try await concurrently(Measure.count) { index in try await QueuePayload.rawPOST(index, url: url, client: Loopback.httpClient) }
            }
        }
        Benchmark("drain-SQLite.Courier") { benchmark, queue in
            try await fillAndDrain(benchmark, queue)
        } setup: {
            try drainQueue("drain.db")
        } teardown: {
            Folder.shared.remove("drain.db")
        }
        // Entries enqueued in a trace each, drained with no tracer bootstrapped: each request
        // carries its stored `traceparent` and `tracestate`.
        Benchmark("drain-SQLite.Courier-traced") { benchmark, queue in
            try await fillAndDrain(benchmark, queue, traced: true)
        } setup: {
            try drainQueue("drain-traced.db")
        } teardown: {
            Folder.shared.remove("drain-traced.db")
        }
    }

    /// A queue for the drain scenarios in the file `name`: `.normal`, as the drain's throughput
    /// figure (settlements commit without a sync each).
    static func drainQueue(_ name: String) throws -> OfflineQueue {
        try OfflineQueue(
            configuration: QueueConfiguration(path: Folder.shared.path(name), durability: .normal, concurrency: 16),
            client: Loopback.client
        )
    }

    /// Fills `queue` with one iteration's entries (each in a trace of its own when `traced`),
    /// not measured, then measures draining them.
    static func fillAndDrain(_ benchmark: Benchmark, _ queue: OfflineQueue, traced: Bool = false) async throws {
        let url = Loopback.baseURL.appendingPathComponent("events").absoluteString
        _ = try await queue.enqueue((0..<Measure.count).map { index in
            var request = QueuedRequest(method: "POST", url: url, headers: QueuePayload.headers, body: .data(QueuePayload.body(index)))
            if traced {
                let id = String(format: "%032x", index + 1)
                request.traceContext = try? TraceContext(traceparent: "00-\(id)-\(id.suffix(16))-01", tracestate: "courier=bench")
            }
            return request
        })
        try await Measure.run(benchmark) {
            let summary = try await queue.drain()
            guard summary.delivered == Measure.count else { throw BenchError("drained \(summary.delivered) of \(Measure.count): \(summary)") }
        }
    }
}

/// The folder of this run's database files, removed when the process ends.
final class Folder: Sendable {
    static let shared = Folder()
    let url: URL

    private init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-benchmarks-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: Folder.shared.url) }
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Removes a database file and its `-wal`, `-shm` and other companions.
    func remove(_ name: String) {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        for file in files where file.hasPrefix(name) { try? FileManager.default.removeItem(atPath: path(file)) }
    }
}
