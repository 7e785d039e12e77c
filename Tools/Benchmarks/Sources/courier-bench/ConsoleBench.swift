// `courier-bench --console`: the operator console (QueueConsole) served on loopback over a
// SQLite queue of 1,000,000 entries: the latency of its pages, cold and warm, and how many
// count queries 50 viewers polling every second make (Docs/Benchmarks.md, *The console*).
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import GRDBSQLite
import HTTPCore
import Hummingbird
import Logging
import Metrics
import NIOCore
import OfflineQueue
import QueueConsole

enum ConsoleBench {
    /// Bump when the fill changes, so a cached file of the old fill is not reused.
    static let fillVersion = 3
    static let token = "console-bench-token"
    static let names = [
        "POST /events", "POST /orders", "PUT /orders/{id}", "POST /payments", "PATCH /profile", "POST /messages",
        "DELETE /sessions/{id}", "POST /uploads", "PUT /settings", "POST /telemetry", "POST /receipts", "POST /audit",
    ]
    static let origins = ["https://api.example.com", "https://billing.example.com:8443", "https://events.example.net", "http://10.0.0.7:8080"]
    static let groups = 2_000

    static func run(arguments: [String]) async throws {
        let option = { (name: String, fallback: Int) -> Int in
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
            return value
        }
        let count = option("--entries", 1_000_000)
        let samples = option("--samples", 100)
        let pollers = option("--pollers", 50)
        let pollSeconds = option("--poll-seconds", 10)
        let path = try await filledQueue(count: count, refill: arguments.contains("--refill"))
        let size = ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) >> 20
        print("courier-bench --console: \(count) entries in \(path) (\(size) MiB); \(samples) warm requests per route, one at a time")

        let mid = count * 65 / 100
        let routes: [(String, String, Bool)] = [
            ("overview, read every time (countsMaxAge 0)", "/", false),
            ("overview JSON, read every time", "/", true),
            ("entries, first page (100)", "/entries", false),
            ("entries, first page of 500", "/entries?limit=500", false),
            ("entries, state=pending", "/entries?state=pending", false),
            ("entries, state=dead", "/entries?state=dead", false),
            ("entries, state=delivered", "/entries?state=delivered", false),
            ("entries, state=inflight", "/entries?state=inflight", false),
            ("entries, group=device-17", "/entries?group=device-17", false),
            ("entries, name=POST /orders", "/entries?name=POST%20%2Forders", false),
            ("entries, name=POST /audit (rare)", "/entries?name=POST%20%2Faudit", false),
            ("entries, origin=https://billing.example.com:8443", "/entries?origin=https%3A%2F%2Fbilling.example.com%3A8443", false),
            ("entries, state=dead&name=POST /payments", "/entries?state=dead&name=POST%20%2Fpayments", false),
            ("entries, a page deep in (after=\(mid))", "/entries?after=\(mid)", false),
            ("entry \(mid)", "/entries/\(mid)", false),
        ]
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        print("| route | cold ms | warm p50 ms | warm p99 ms | warm max ms |")
        print("|---|---:|---:|---:|---:|")
        for (label, route, json) in routes {
            // Cold: the first request on a queue just opened (SQLite's page cache empty, the
            // system's file cache as the previous routes left it).
            let served = try await Served(path: path, countsMaxAge: .zero)
            let cold = try await served.get(route, json: json, client: client)
            for _ in 0..<3 { _ = try await served.get(route, json: json, client: client) }
            var warm: [Double] = []
            for _ in 0..<samples { warm.append(try await served.get(route, json: json, client: client)) }
            warm.sort()
            print("| \(label) | \(ms(cold)) | \(ms(percentile(warm, 0.5))) | \(ms(percentile(warm, 0.99))) | \(ms(warm.last ?? 0)) |")
            await served.stop()
        }

        // The overview as viewers see it: shared, read at most once a second.
        let counter = CountingMetrics()
        let served = try await Served(path: path, countsMaxAge: .seconds(1), metrics: counter)
        var shared: [Double] = []
        for _ in 0..<samples { shared.append(try await served.get("/", json: false, client: client)) }
        shared.sort()
        print("| overview, shared (countsMaxAge 1 s, requests back to back) | – | \(ms(percentile(shared, 0.5))) | \(ms(percentile(shared, 0.99))) | \(ms(shared.last ?? 0)) |")

        // Viewers polling every second, each from its own offset in the first second.
        let before = (counts: counter.value("courier_queue_count_queries_total", query: "counts"), tally: counter.value("courier_queue_count_queries_total", query: "tally"))
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for viewer in 0..<pollers {
                group.addTask {
                    var seen: [Double] = []
                    let offset = Duration.milliseconds(1_000 * viewer / max(1, pollers))
                    for tick in 0..<pollSeconds {
                        try await Task.sleep(until: start + offset + .seconds(tick), clock: .continuous)
                        seen.append(try await served.get("/", json: false, client: client))
                    }
                    return seen
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }.sorted()
        }
        let elapsed = (ContinuousClock.now - start).seconds
        let counts = counter.value("courier_queue_count_queries_total", query: "counts") - before.counts
        let tallies = counter.value("courier_queue_count_queries_total", query: "tally") - before.tally
        print("\(pollers) viewers polling the overview every second for \(pollSeconds) s (\(latencies.count) polls in \(String(format: "%.1f", elapsed)) s): "
              + "\(counts) count queries (\(String(format: "%.2f", Double(counts) / elapsed))/s), \(tallies) tallies; poll latency p50 \(ms(percentile(latencies, 0.5))) ms, p99 \(ms(percentile(latencies, 0.99))) ms, max \(ms(latencies.last ?? 0)) ms")
        await served.stop()
        try await client.shutdown()
    }

    /// A console over the queue at `path`, opened now, served on a loopback port.
    struct Served: Sendable {
        let queue: OfflineQueue
        let port: Int
        let server: Task<Void, any Error>

        init(path: String, countsMaxAge: Duration, metrics: (any MetricsFactory)? = nil) async throws {
            var configuration = QueueConfiguration(path: path, createIfMissing: false, durability: .normal)
            configuration.metrics.factory = metrics
            configuration.metrics.isEnabled = metrics != nil
            queue = try OfflineQueue(configuration: configuration, client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport()))
            let users = try ConsoleUsers(parsing: ConsoleUsers.line(name: "bench", role: .admin, token: ConsoleBench.token))
            var logger = Logger(label: "console-bench")
            logger.logLevel = .warning
            let console = QueueConsole(queue: queue, users: users, countsMaxAge: countsMaxAge, logger: logger)
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            let app = Application(
                router: console.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger
            )
            server = Task { try await app.runService(gracefulShutdownSignals: []) }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else { throw BenchError("the console did not start") }
            self.port = port
        }

        /// One GET, its whole body read; milliseconds from sending to the last byte.
        func get(_ route: String, json: Bool, client: HTTPClient) async throws -> Double {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(route)")
            request.headers.add(name: "Authorization", value: "Bearer \(ConsoleBench.token)")
            if json { request.headers.add(name: "Accept", value: "application/json") }
            let began = ContinuousClock.now
            let response = try await client.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 64 << 20)
            let took = (ContinuousClock.now - began).seconds * 1_000
            guard response.status == .ok else { throw BenchError("GET \(route): \(response.status) \(String(buffer: body).prefix(200))") }
            return took
        }

        func stop() async {
            server.cancel()
            _ = await server.result
            await queue.close()
        }
    }

    // MARK: - The queue

    /// A SQLite queue of `count` entries, made once and kept beside the benchmark's binary
    /// (under `.build`), so later runs reuse it: enqueued through `OfflineQueue.enqueue` in
    /// batches of 10,000, then given the states a drain and time would leave (by SQL, in one
    /// transaction: draining a million entries to a server would measure the drain).
    static func filledQueue(count: Int, refill: Bool) async throws -> String {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("console-bench")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("queue-\(count)-v\(fillVersion).sqlite").path
        if !refill, FileManager.default.fileExists(atPath: path) { return path }
        let filling = path + ".filling"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: filling + suffix) }
        let began = ContinuousClock.now
        let queue = try OfflineQueue(
            configuration: QueueConfiguration(path: filling, durability: .normal),
            client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
        )
        var generator = Bootstrap.SplitMix64(seed: 0xC0_1501E)
        let batch = 10_000
        // A tenth of the queue is enqueued later, each entry waiting for a parent.
        let base = count - count / 10
        for start in stride(from: 0, to: base, by: batch) {
            let requests = (start..<min(base, start + batch)).map { index -> QueuedRequest in
                // Names and origins skewed (a few carry most entries), groups spread.
                let name = names[min(names.count - 1, Int(Double(names.count) * pow(Double(generator.next() % 10_000) / 10_000, 2.5)))]
                let origin = origins[min(origins.count - 1, Int(Double(origins.count) * pow(Double(generator.next() % 10_000) / 10_000, 2)))]
                let group = generator.next() % 5 == 0 ? nil : "device-\(generator.next() % UInt64(groups))"
                return QueuedRequest(
                    method: "POST", url: "\(origin)/v1/\(name.split(separator: "/")[1])/\(index)", headers: QueuePayload.headers,
                    body: .data(QueuePayload.body(index)), name: name, options: EnqueueOptions(group: group)
                )
            }
            _ = try await queue.enqueue(requests)
        }
        await queue.close()
        let enqueued = ContinuousClock.now - began
        try settle(path: filling, count: count - count / 10)
        try await enqueueWaiting(path: filling, base: count - count / 10, count: count / 10)
        try FileManager.default.moveItem(atPath: filling, toPath: path)
        for suffix in ["-wal", "-shm", ".reserve"] { try? FileManager.default.removeItem(atPath: filling + suffix) }
        print("filled \(count) entries: enqueued in \(String(format: "%.1f", enqueued.seconds)) s (\(Int(Double(count) / enqueued.seconds))/s), states set in \(String(format: "%.1f", (ContinuousClock.now - began - enqueued).seconds)) s")
        return path
    }

    /// A tenth of the queue waiting for parents (issue 48): children of entries pending in a
    /// backoff (ten each), enqueued through `OfflineQueue.enqueue` after the states are set,
    /// so they stay blocked; half in groups.
    static func enqueueWaiting(path: String, base: Int, count: Int) async throws {
        let queue = try OfflineQueue(
            configuration: QueueConfiguration(path: path, durability: .normal),
            client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
        )
        let old = base * 60 / 100, middle = base * 70 / 100
        // The entries `settle` left pending in a backoff.
        let parents = stride(from: old + 1, through: middle, by: 1).filter { $0 % 4 == 1 }.map { EntryID($0) }
        for start in stride(from: 0, to: count, by: 10_000) {
            _ = try await queue.enqueue((start..<min(count, start + 10_000)).map { index in
                QueuedRequest(
                    method: "POST", url: "\(origins[0])/v1/attachments/\(index)", headers: QueuePayload.headers,
                    body: .data(QueuePayload.body(index)), name: "POST /attachments",
                    options: EnqueueOptions(group: index % 2 == 0 ? "device-\(index % groups)" : nil, after: [parents[(index / 10) % parents.count]])
                )
            })
        }
        await queue.close()
    }

    /// The states of a queue that has worked for days: the oldest 60 % delivered (one in 20
    /// dead, rejected), the next 10 % delivered, dead after retries, or pending in a backoff,
    /// the newest 30 % pending (one in 20 waiting for the network), 50 in flight under an
    /// owner of another boot (held by a dead owner); made over the last 7 days, delivered up
    /// to now.
    static func settle(path: String, count: Int) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else { throw BenchError("open \(path)") }
        defer { sqlite3_close_v2(db) }
        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))") }
        }
        let now = Date().timeIntervalSince1970
        let old = count * 60 / 100, middle = count * 70 / 100
        let span = 7 * 86_400 / Double(count)
        try exec("BEGIN")
        try exec("UPDATE entry SET created_at = \(now) - (\(count) - id) * \(span), budget_from = \(now) - (\(count) - id) * \(span), next_attempt_at = \(now) - (\(count) - id) * \(span)")
        try exec("""
            UPDATE entry SET state = 'delivered', attempts = 1, last_status = 201, finished_at = \(now) - (\(middle) - id) * 0.5,
                last_attempt_at = \(now) - (\(middle) - id) * 0.5
            WHERE id <= \(middle) AND NOT (id <= \(old) AND id % 20 = 0) AND NOT (id > \(old) AND id % 4 IN (0, 1))
            """)
        try exec("""
            UPDATE entry SET state = 'dead', attempts = 1, last_status = 422, dead_reason = 'rejected', finished_at = created_at + 2,
                last_attempt_at = created_at + 2, last_error = 'HTTP 422', response_excerpt = '{"error":"invalid payload"}'
            WHERE id <= \(old) AND id % 20 = 0
            """)
        try exec("""
            UPDATE entry SET state = 'dead', attempts = 8, last_status = 503, dead_reason = 'attemptsExhausted', finished_at = created_at + 3600,
                last_attempt_at = created_at + 3600, last_error = 'HTTP 503', response_excerpt = 'Service Unavailable'
            WHERE id > \(old) AND id <= \(middle) AND id % 4 = 0
            """)
        try exec("""
            UPDATE entry SET attempts = 3, last_status = 503, last_error = 'HTTP 503', last_attempt_at = \(now) - 60,
                due_uptime = budget_uptime + 600, next_attempt_at = \(now) + 600
            WHERE id > \(old) AND id <= \(middle) AND id % 4 = 1
            """)
        // Conflicts left for an operator: one in 50 of those.
        try exec("""
            UPDATE entry SET state = 'conflict', last_status = 409, last_error = 'HTTP 409', response_excerpt = '{"error":"version"}', dead_reason = NULL
            WHERE id > \(old) AND id <= \(middle) AND id % 200 = 0
            """)
        try exec("UPDATE entry SET waiting_network = 1, attempts = 1, last_error = 'not connected' WHERE id > \(middle) AND id % 20 = 0")
        try exec("""
            INSERT INTO lease (entry_id, owner, boot, until_uptime, until_wall, attempt_wall, attempt_uptime)
            SELECT id, 'bench-host:4242:0123456789ab:another-boot', 'another-boot', 0, \(now) - 30, \(now) - 60, 0
            FROM entry WHERE id > \(middle) AND id % 20 <> 0 ORDER BY id LIMIT 50
            """)
        // What a drain of this boot leaves: every open row on it (the counts then skip the
        // carry-over of rows from another boot, as on a queue a service drains).
        try exec("UPDATE queue_meta SET clock_boot = (SELECT clock_boot FROM entry WHERE state = 'pending' LIMIT 1)")
        try exec("COMMIT")
        try exec("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
    }

    static func ms(_ value: Double) -> String { String(format: value < 10 ? "%.2f" : "%.1f", value) }
}

/// Counters kept in memory by label and `query` dimension; every other metric dropped.
final class CountingMetrics: MetricsFactory, @unchecked Sendable {
    // Every field is read and written under `lock`.
    private let lock = NSLock()
    private var counts: [String: Int64] = [:]

    func value(_ label: String, query: String) -> Int64 {
        lock.withLock { counts["\(label){\(query)}"] ?? 0 }
    }

    func add(_ key: String, _ amount: Int64) {
        lock.withLock { counts[key, default: 0] += amount }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Counting(key: "\(label){\(dimensions.first { $0.0 == "query" }?.1 ?? "")}", owner: self)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { NOOPMetricsHandler.instance }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    final class Counting: CounterHandler, Sendable {
        let key: String
        let owner: CountingMetrics
        init(key: String, owner: CountingMetrics) {
            self.key = key
            self.owner = owner
        }
        func increment(by amount: Int64) { owner.add(key, amount) }
        func reset() {}
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
