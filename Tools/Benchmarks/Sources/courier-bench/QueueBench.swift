// The offline queue's benchmarks (`courier-bench --queue`), each against a raw baseline in the
// same run:
//   - durable single enqueues versus raw SQLite inserts of the same row, same pragmas, one
//     transaction each (for both durabilities);
//   - batched enqueue (100 and 1,000 per transaction) versus raw batched inserts;
//   - draining N entries to the loopback server at concurrency 16 versus raw AsyncHTTPClient
//     posting the same bodies at the same concurrency;
//   - peak memory while draining 10,000 and 100,000 entries, each in a child process
//     (`courier-bench --queue-memory N`).
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import GRDBSQLite
import HTTPCore
import HTTPTypes
import NIOCore
import OfflineQueue
#if canImport(Glibc)
import Glibc
#endif

enum QueueBench {
    static let headers = QueuePayload.headers

    static func body(_ index: Int) -> Data { QueuePayload.body(index) }

    static func run(arguments: [String]) async throws {
        let option = { (name: String, fallback: Int) -> Int in
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
            return value
        }
        let singles = option("--enqueues", 2_000)
        let drainCount = option("--drain", 10_000)
        let rounds = option("--rounds", 3)
        let memory = arguments.contains("--no-memory") ? [] : [10_000, 100_000]
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-queue-bench-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        print("courier-bench --queue: \(rounds) rounds; \(singles) single enqueues, \(drainCount) entries drained at concurrency 16; folder \(folder.path)")

        for durability in [QueueDurability.normal, .full] {
            // fsync per commit makes FULL slow on most disks: fewer of them.
            let count = durability == .full ? max(100, singles / 4) : singles
            var raw: [Double] = []
            var queued: [Double] = []
            for round in 1...rounds {
                let rawRate = try rawInserts(count: count, batch: 1, path: folder.appendingPathComponent("raw-\(durability)-\(round).db").path, durability: durability)
                let queueRate = try await queueEnqueues(count: count, batch: 1, path: folder.appendingPathComponent("queue-\(durability)-\(round).db").path, durability: durability).rate
                raw.append(rawRate)
                queued.append(queueRate)
                print("  round \(round) single enqueue (\(durability)): raw SQLite \(Bench.format(rawRate))/s, OfflineQueue \(Bench.format(queueRate))/s")
            }
            report("single enqueue, synchronous=\(durability == .full ? "FULL" : "NORMAL")", raw: raw, courier: queued, unit: "entries/s")
            // 16 callers enqueueing at once (a group commit shares their syncs) against the same
            // raw inserts, one at a time: what the group commit buys.
            var concurrent: [Double] = []
            for round in 1...rounds {
                let queue = try OfflineQueue(
                    configuration: QueueConfiguration(path: folder.appendingPathComponent("concurrent-\(durability)-\(round).db").path, durability: durability),
                    client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
                )
                let enqueue = Variant(name: "16 concurrent enqueuers") {
                    _ = try await queue.enqueue(method: "POST", url: QueuePayload.url, headers: headers, body: .data(body(1)))
                }
                concurrent.append(Bench.rate(count, try await enqueue.run(requests: count, concurrency: 16).wall))
            }
            report("16 concurrent enqueuers vs one raw insert at a time, synchronous=\(durability == .full ? "FULL" : "NORMAL")", raw: raw, courier: concurrent, unit: "entries/s")
        }

        for batch in [100, 1_000] {
            let count = batch * 20
            var raw: [Double] = []
            var queued: [Double] = []
            for round in 1...rounds {
                raw.append(try rawInserts(count: count, batch: batch, path: folder.appendingPathComponent("rawb-\(batch)-\(round).db").path, durability: .full))
                queued.append(try await queueEnqueues(count: count, batch: batch, path: folder.appendingPathComponent("queueb-\(batch)-\(round).db").path, durability: .full).rate)
            }
            report("batched enqueue, \(batch) per transaction, synchronous=FULL", raw: raw, courier: queued, unit: "entries/s")
        }

        let server = try ServerProcess.start()
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/events"
        let (httpClient, client) = QueueBench.drainClients(port: server.port)
        // Warm the pool and the server.
        _ = try await rawPosts(count: 2_000, url: url, client: httpClient)
        for durability in [QueueDurability.normal, .full] {
            var raw: [Double] = []
            var drained: [Double] = []
            for round in 1...rounds {
                let rawRate = try await rawPosts(count: drainCount, url: url, client: httpClient)
                let drainRate = try await queueDrain(count: drainCount, url: url, client: client, path: folder.appendingPathComponent("drain-\(durability)-\(round).db").path, durability: durability)
                raw.append(rawRate)
                drained.append(drainRate)
                print("  round \(round) drain (\(durability)): raw AsyncHTTPClient \(Bench.format(rawRate)) req/s, OfflineQueue.drain \(Bench.format(drainRate)) entries/s")
            }
            report("drain \(drainCount) entries at concurrency 16, synchronous=\(durability == .full ? "FULL" : "NORMAL")", raw: raw, courier: drained, unit: "req/s")
        }
        try await httpClient.shutdown()

        for count in memory {
            try memoryChild(count: count, port: server.port)
        }
    }

    /// One `HTTPClient` with a pool of 16 connections for both sides of a drain comparison,
    /// and an `APIClient` over it for the queue.
    static func drainClients(port: Int) -> (HTTPClient, APIClient) {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let client = APIClient(
            configuration: ClientConfiguration(baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: .seconds(30)),
            transport: AsyncHTTPClientTransport(client: httpClient)
        )
        return (httpClient, client)
    }

    static func report(_ name: String, raw: [Double], courier: [Double], unit: String) {
        let ratios = zip(courier, raw).map { $0 / $1 }.sorted()
        let median = ratios[ratios.count / 2]
        print("\(name): raw \(Bench.format(raw.sorted()[raw.count / 2])) \(unit), OfflineQueue \(Bench.format(courier.sorted()[courier.count / 2])) \(unit), ratio \(String(format: "%.2f", median)) (median of rounds)")
    }

    // MARK: - Enqueue

    /// Raw SQLite: the queue's own table (made by opening a queue on the file first), the same
    /// pragmas, and the same row as `OfflineQueue.enqueue` writes, `batch` rows per transaction.
    static func rawInserts(count: Int, batch: Int, path: String, durability: QueueDurability) throws -> Double {
        do {
            _ = try OfflineQueue(configuration: QueueConfiguration(path: path, durability: durability), client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport()))
        }
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else { throw BenchError("sqlite3_open_v2 \(path)") }
        defer { sqlite3_close_v2(db) }
        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))") }
        }
        try exec("PRAGMA journal_mode = WAL")
        try exec("PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
        try exec("PRAGMA busy_timeout = 30000")
        var statement: OpaquePointer?
        let sql = """
            INSERT INTO entry (idempotency_key, method, url, headers, body, body_file, body_length, scopes, name,
                group_key, priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at)
            VALUES (?, ?, ?, ?, ?, NULL, ?, '', ?, NULL, 0, NULL, 'pending', 0, ?, ?, ?)
            ON CONFLICT (idempotency_key) DO NOTHING
            """
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw BenchError("prepare") }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let headerText = headers.map { "\($0.name): \($0.value)\n" }.joined()
        let start = ContinuousClock.now
        var index = 0
        while index < count {
            try exec("BEGIN IMMEDIATE")
            for _ in 0..<min(batch, count - index) {
                let key = UUID().uuidString.lowercased()
                let body = Self.body(index)
                let now = Date().timeIntervalSince1970
                sqlite3_bind_text(statement, 1, key, -1, transient)
                sqlite3_bind_text(statement, 2, "POST", -1, transient)
                sqlite3_bind_text(statement, 3, "http://127.0.0.1:8080/events", -1, transient)
                sqlite3_bind_text(statement, 4, headerText, -1, transient)
                _ = body.withUnsafeBytes { sqlite3_bind_blob(statement, 5, $0.baseAddress, Int32($0.count), transient) }
                sqlite3_bind_int64(statement, 6, Int64(body.count))
                sqlite3_bind_text(statement, 7, "POST /events", -1, transient)
                sqlite3_bind_double(statement, 8, now)
                sqlite3_bind_double(statement, 9, now)
                sqlite3_bind_double(statement, 10, now)
                guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError("insert: \(String(cString: sqlite3_errmsg(db)))") }
                sqlite3_reset(statement)
                index += 1
            }
            try exec("COMMIT")
        }
        return Bench.rate(count, ContinuousClock.now - start)
    }

    /// `count` enqueues into a new queue at `path`, `batch` per transaction; the queue's opening
    /// is not measured.
    static func queueEnqueues(count: Int, batch: Int, path: String, durability: QueueDurability) async throws -> Measured {
        let queue = try OfflineQueue(
            configuration: QueueConfiguration(path: path, durability: durability),
            client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
        )
        let measured = try await Measured.of(count: count) {
            let start = ContinuousClock.now
            if batch == 1 {
                for index in 0..<count {
                    _ = try await queue.enqueue(method: "POST", url: QueuePayload.url, headers: headers, body: .data(body(index)))
                }
            } else {
                for first in stride(from: 0, to: count, by: batch) {
                    _ = try await queue.enqueue((first..<min(count, first + batch)).map {
                        QueuedRequest(method: "POST", url: QueuePayload.url, headers: headers, body: .data(body($0)))
                    })
                }
            }
            return Bench.rate(count, ContinuousClock.now - start)
        }
        // Closed, or its checkpointer and wake-file watcher go on in the background and cost
        // whatever this process measures next.
        await queue.close()
        return measured
    }

    /// `count` inserts into a ``MinimalTable`` at `path`, one transaction each; making the table
    /// is not measured.
    static func minimalInserts(count: Int, path: String) async throws -> Measured {
        let table = try MinimalTable(path: path)
        return try await Measured.of(count: count) {
            let start = ContinuousClock.now
            for index in 0..<count { try table.insert(index) }
            return Bench.rate(count, ContinuousClock.now - start)
        }
    }

    // MARK: - Drain

    /// `count` POSTs of the drain's requests, 16 at a time, through raw AsyncHTTPClient.
    static func rawPosts(count: Int, url: String, client: HTTPClient) async throws -> Double {
        try await posting(count) { index in try await QueuePayload.rawPOST(index, url: url, client: client) }
    }

    /// The drain's POSTs (its headers, an idempotency key, the same bodies) through
    /// `APIClient.send`, 16 at a time, no queue: what a drain would reach if the queue itself
    /// cost nothing (`BENCH_ONLY=drain-ceiling`).
    static func clientPosts(count: Int, path: String, client: APIClient) async throws -> Double {
        try await posting(count) { index in
            var fields = HTTPFields()
            for header in headers { fields.append(HTTPField(name: HTTPField.Name(header.name)!, value: header.value)) }
            fields.append(HTTPField(name: HTTPField.Name("Idempotency-Key")!, value: UUID().uuidString.lowercased()))
            try await client.send(Request<Void>.post(path, body: .data(body(index)), headers: fields))
        }
    }

    /// Calls `post` for indexes `0..<count` from 16 tasks; returns calls per second.
    private static func posting(_ count: Int, _ post: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await concurrently(count, post)
        return Bench.rate(count, ContinuousClock.now - start)
    }

    /// Fills a queue with `count` entries (not timed), then times one drain at concurrency 16.
    static func queueDrain(count: Int, url: String, client: APIClient, path: String, durability: QueueDurability) async throws -> Double {
        try await measuredDrain(count: count, url: url, client: client, path: path, durability: durability).rate
    }

    /// ``queueDrain(count:url:client:path:durability:)``, measured (the fill not counted).
    static func measuredDrain(count: Int, url: String, client: APIClient, path: String, durability: QueueDurability) async throws -> Measured {
        var configuration = QueueConfiguration(path: path, durability: durability, concurrency: 16)
        if ProcessInfo.processInfo.environment["BENCH_NO_METRICS"] == "1" { configuration.metrics.isEnabled = false }
        let queue = try OfflineQueue(configuration: configuration, client: client)
        try await fill(queue, count: count, url: url)
        let measured = try await Measured.of(count: count) {
            let start = ContinuousClock.now
            let summary = try await queue.drain()
            guard summary.delivered == count else { throw BenchError("drained \(summary.delivered) of \(count): \(summary)") }
            return Bench.rate(count, ContinuousClock.now - start)
        }
        await queue.close()
        return measured
    }

    static func fill(_ queue: OfflineQueue, count: Int, url: String) async throws {
        for first in stride(from: 0, to: count, by: 1_000) {
            _ = try await queue.enqueue((first..<min(count, first + 1_000)).map {
                QueuedRequest(method: "POST", url: url, headers: headers, body: .data(body($0)))
            })
        }
    }

    // MARK: - Memory

    /// Runs `courier-bench --queue-memory COUNT PORT` and prints its report.
    static func memoryChild(count: Int, port: Int) throws {
        let process = Process()
        process.executableURL = Child.courierBench
        process.arguments = ["--queue-memory", String(count), String(port)]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("the memory child for \(count) entries failed") }
    }

    /// In the child: fill `count` entries, reset the high-water mark, drain while sampling RSS.
    static func memory(count: Int, port: Int) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-queue-memory-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = "http://127.0.0.1:\(port)/events"
        let client = APIClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, transport: AsyncHTTPClientTransport())
        let queue = try OfflineQueue(configuration: QueueConfiguration(path: folder.appendingPathComponent("queue.db").path, durability: .normal, concurrency: 16), client: client)
        try await fill(queue, count: count, url: url)
        let afterFill = residentKiB("VmRSS")
        // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0 and later).
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let samples = LockedSamples()
        let events = queue.events(bufferingPolicy: .bufferingNewest(64))
        let sampler = Task {
            var delivered = 0
            for await event in events {
                guard case .delivered = event else { continue }
                delivered += 1
                for mark in [10, 50, 90] where delivered == count * mark / 100 {
                    samples.add("\(mark)%: \(residentKiB("VmRSS") / 1024) MiB")
                }
            }
        }
        let start = ContinuousClock.now
        let summary = try await queue.drain()
        let elapsed = ContinuousClock.now - start
        sampler.cancel()
        let peak = residentKiB("VmHWM")
        print("memory, draining \(count) entries: RSS after fill \(afterFill / 1024) MiB; during drain \(samples.all.joined(separator: ", ")); peak during drain \(peak / 1024) MiB; \(summary.delivered) delivered in \(elapsed) (\(Bench.format(Bench.rate(count, elapsed))) entries/s)")
    }

    /// A field of /proc/self/status in KiB.
    static func residentKiB(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}

final class LockedSamples: @unchecked Sendable {
    private let lock = NSLock()
    private var samples: [String] = []

    func add(_ sample: String) {
        lock.lock()
        samples.append(sample)
        lock.unlock()
    }

    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return samples
    }
}

/// A transport that answers 200 at once: measures the queue's machinery without a network.
struct InstantTransport: Transport {
    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        TransportResponse(head: HTTPResponse(status: .ok), body: ByteStream(data: Data()))
    }
}

extension QueueBench {
    /// `courier-bench --queue-stub N`: the drain and APIClient.send rates over `InstantTransport`.
    static func machinery(count: Int) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-queue-stub-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = APIClient(baseURL: URL(string: "http://127.0.0.1:9")!, transport: InstantTransport())
        // For profiling one phase alone: BENCH_STUB_DB=path BENCH_STUB_PHASE=fill, then =drain.
        let environment = ProcessInfo.processInfo.environment
        let path = environment["BENCH_STUB_DB"] ?? folder.appendingPathComponent("q.db").path
        let phase = environment["BENCH_STUB_PHASE"]
        let queue = try OfflineQueue(configuration: QueueConfiguration(path: path, durability: .normal, concurrency: 16), client: client)
        if phase != "drain" { try await fill(queue, count: count, url: "http://127.0.0.1:9/events") }
        if phase == "fill" { return }
        let start = ContinuousClock.now
        let summary = try await queue.drain()
        print("drain over an instant transport: \(Bench.format(Bench.rate(summary.delivered, ContinuousClock.now - start))) entries/s")
        if phase == "drain" { return }
        let request = Request<Void>.post("/events", body: .data(body(1), contentType: "application/json"))
        let variant = Variant(name: "APIClient.send over an instant transport") { try await client.send(request) }
        let measured = try await variant.run(requests: count, concurrency: 16)
        print("APIClient.send over an instant transport: \(Bench.format(Bench.rate(count, measured.wall))) calls/s")
    }
}
