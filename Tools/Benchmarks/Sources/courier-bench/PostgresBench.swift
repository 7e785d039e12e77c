// The PostgreSQL store's figures (`courier-bench --postgres`, and `--goals` when a server is
// given), each against its raw baseline in the same run:
//   - one enqueue at a time, and 16 concurrent enqueuers, against raw postgres-nio inserts of the
//     same row into the same table (`entry` of the queue's schema), same transaction shape: one
//     INSERT … RETURNING id plus `pg_notify` per transaction, through a `PostgresClient` with
//     the queue's pool size;
//   - a drain of 10,000 POSTs at concurrency 16 against raw AsyncHTTPClient (the drain
//     comparison of the SQLite figures; only the store differs);
//   - the scale-out curve: claims per second with 1, 2, 4 and 8 drainer processes on one schema.
//
// The server is the caller's: `COURIER_BENCH_POSTGRES_URL` (and `PGPASSWORD`); the benchmark
// starts no PostgreSQL of its own. Every schema it makes is named `<prefix>_<pid>_<what>` and
// dropped at the end. See Docs/Benchmarks.md, "PostgreSQL".
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
import Logging
import OfflineQueue
import OfflineQueuePostgres
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

enum PostgresBench {
    static let environmentKey = "COURIER_BENCH_POSTGRES_URL"

    /// The server the figures run against, read from `COURIER_BENCH_POSTGRES_URL`.
    struct Server: Sendable {
        let host: String
        let port: Int
        let user: String
        let database: String
        let password: String?
        /// Schemas made by the benchmark start with this (the URL's `schema`, else `courier_bench`).
        let prefix: String

        init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
            let location: PostgresLocation
            do {
                location = try PostgresLocation(url: url, environment: environment)
            } catch {
                throw BenchError("\(environmentKey): \(error)")
            }
            host = location.host
            port = location.port
            user = location.user
            database = location.database
            password = URLComponents(string: url)?.password?.removingPercentEncoding ?? environment["PGPASSWORD"]
            prefix = url.contains("schema=") ? location.schema : "courier_bench"
        }

        /// The queue's URL for `schema`; no TLS (loopback), for the raw side too. The password
        /// stays in `PGPASSWORD` unless the given URL carried it.
        func queueURL(schema: String) -> String {
            var components = URLComponents()
            components.scheme = "postgres"
            components.user = user
            if let password, ProcessInfo.processInfo.environment["PGPASSWORD"] != password { components.password = password }
            components.host = host
            components.port = port
            components.path = "/" + database
            components.queryItems = [URLQueryItem(name: "schema", value: schema), URLQueryItem(name: "sslmode", value: "disable")]
            return components.string!
        }

        /// A raw postgres-nio pool on the same server, no TLS.
        func rawClient(connections: Int) -> PostgresClient {
            var configuration = PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: .disable)
            configuration.options.connectTimeout = .seconds(5)
            configuration.options.maximumConnections = connections
            configuration.options.minimumConnections = 0
            return PostgresClient(configuration: configuration, backgroundLogger: PostgresBench.quiet)
        }
    }

    /// The queue's logger and the pools': warnings and worse only (migrations log at `info`).
    static let quiet: Logger = {
        var logger = Logger(label: "courier-bench.postgres")
        logger.logLevel = .warning
        return logger
    }()

    /// The queue's concurrency in every figure, and so its pool: `max(4, 16 / 2 + 2)` = 10
    /// connections (``OfflineQueue/open(configuration:client:monitor:logger:)``). The raw pool
    /// gets as many.
    static let concurrency = 16
    static let poolSize = max(4, concurrency / 2 + 2)

    /// The server from the environment, or `nil` (the figures are skipped).
    static func configuredServer() throws -> Server? {
        guard let url = ProcessInfo.processInfo.environment[environmentKey], !url.isEmpty else { return nil }
        return try Server(url: url)
    }

    static let skipped = "PostgreSQL figures skipped: set \(environmentKey) (and PGPASSWORD) to a server's URL, e.g. one started by Tools/pg-cluster (see Docs/Benchmarks.md)"

    /// `courier-bench --postgres [--rounds R] [--enqueues N] [--drain N] [--scale N] [--processes 1,2,4,8]`.
    static func run(arguments: [String]) async throws {
        let option = { (name: String, fallback: Int) -> Int in
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
            return value
        }
        guard let database = try configuredServer() else {
            FileHandle.standardError.write(Data("courier-bench --postgres: \(skipped)\n".utf8))
            exit(2)
        }
        var processes = [1, 2, 4, 8]
        if let index = arguments.firstIndex(of: "--processes"), index + 1 < arguments.count {
            processes = arguments[index + 1].split(separator: ",").compactMap { Int($0) }
        }
        let server = try ServerProcess.start()
        defer { server.stop() }
        let results = try await figures(
            database: database, server: server, rounds: option("--rounds", 5), enqueues: option("--enqueues", 500),
            drainCount: option("--drain", 10_000), scaleCount: option("--scale", 8_000), processes: processes
        )
        Goals.table(results.ratios)
        curve(results.curve, entries: option("--scale", 8_000))
    }

    struct Figures {
        var ratios: [Goals.Result] = []
        /// Drainer processes → entries per second over the wall time of all of them (one per round).
        var curve: [(processes: Int, rates: [Double])] = []
    }

    /// Every PostgreSQL figure, `rounds` alternating rounds each.
    static func figures(database: Server, server: ServerProcess, rounds: Int, enqueues: Int = 500, drainCount: Int = 10_000, scaleCount: Int = 8_000, processes: [Int] = [1, 2, 4, 8]) async throws -> Figures {
        let tag = "\(database.prefix)_\(getpid())"
        print("courier-bench --postgres: \(database.user)@\(database.host):\(database.port)/\(database.database), schemas \(tag)_*, \(rounds) rounds; pool of \(poolSize) connections each side")
        let raw = database.rawClient(connections: poolSize)
        let runner = Task { await raw.run() }
        defer { runner.cancel() }
        let made = LockedSamples()
        let figures: Figures
        do {
            figures = try await measure(database: database, raw: raw, server: server, rounds: rounds, enqueues: enqueues, drainCount: drainCount,
                                        scaleCount: scaleCount, processes: processes, tag: tag, made: made)
        } catch {
            await drop(made.all, raw: raw)
            throw error
        }
        await drop(made.all, raw: raw)
        return figures
    }

    private static func measure(
        database: Server, raw: PostgresClient, server: ServerProcess, rounds: Int, enqueues: Int, drainCount: Int,
        scaleCount: Int, processes: [Int], tag: String, made: LockedSamples
    ) async throws -> Figures {
        var figures = Figures()
        let offline = APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
        func open(_ schema: String, client: APIClient) async throws -> OfflineQueue {
            try await PostgresBench.open(database, schema: schema, client: client, made: made)
        }

        // MARK: Enqueue, one at a time and 16 at once
        // Each side writes its own schema, made by the queue (same table, same indexes).
        let rawSchema = "\(tag)_raw", queueSchema = "\(tag)_enqueue"
        await (try await open(rawSchema, client: offline)).close()
        let queue = try await open(queueSchema, client: offline)
        // Warm both pools and the server's caches.
        _ = try await rawInserts(count: 200, concurrency: concurrency, schema: rawSchema, client: raw)
        _ = try await queueEnqueues(count: 200, concurrency: concurrency, queue: queue)
        for concurrent in [1, 16] {
            var baseline: [Double] = [], courier: [Double] = []
            let count = concurrent == 1 ? enqueues : enqueues * 4
            for round in 1...rounds {
                if round.isMultiple(of: 2) {
                    courier.append(try await queueEnqueues(count: count, concurrency: concurrent, queue: queue))
                    baseline.append(try await rawInserts(count: count, concurrency: concurrent, schema: rawSchema, client: raw))
                } else {
                    baseline.append(try await rawInserts(count: count, concurrency: concurrent, schema: rawSchema, client: raw))
                    courier.append(try await queueEnqueues(count: count, concurrency: concurrent, queue: queue))
                }
                print("  round \(round) enqueue, \(concurrent) at a time: raw postgres-nio \(Bench.format(baseline.last!))/s, OfflineQueue \(Bench.format(courier.last!))/s")
            }
            let figure = concurrent == 1
                ? "PostgreSQL: one enqueue at a time vs one raw postgres-nio INSERT + pg_notify per transaction"
                : "PostgreSQL: 16 concurrent enqueuers vs 16 concurrent raw INSERT + pg_notify transactions"
            figures.ratios.append(Goals.Result(figure: figure, baseline: Goals.median(baseline), courier: Goals.median(courier), unit: "/s", ratio: Goals.median(zip(courier, baseline).map(/)), goal: nil))
        }
        await queue.close()

        // MARK: Drain 10,000 POSTs at concurrency 16
        let url = "http://127.0.0.1:\(server.port)/events"
        let (httpClient, client) = QueueBench.drainClients(port: server.port)
        _ = try await QueueBench.rawPosts(count: 2_000, url: url, client: httpClient)
        var baseline: [Double] = [], courier: [Double] = []
        for round in 1...rounds {
            let drain = { () async throws -> Double in
                try await measuredDrain(database: database, schema: "\(tag)_drain_\(round)", count: drainCount, url: url, client: client, made: made).rate
            }
            if round.isMultiple(of: 2) {
                courier.append(try await drain())
                baseline.append(try await QueueBench.rawPosts(count: drainCount, url: url, client: httpClient))
            } else {
                baseline.append(try await QueueBench.rawPosts(count: drainCount, url: url, client: httpClient))
                courier.append(try await drain())
            }
            print("  round \(round) drain on PostgreSQL: raw AsyncHTTPClient \(Bench.format(baseline.last!)) req/s, OfflineQueue.drain \(Bench.format(courier.last!)) entries/s")
        }
        try await httpClient.shutdown()
        figures.ratios.append(Goals.Result(
            figure: "PostgreSQL: drain \(drainCount) POSTs, concurrency 16, vs raw AsyncHTTPClient", baseline: Goals.median(baseline),
            courier: Goals.median(courier), unit: "/s", ratio: Goals.median(zip(courier, baseline).map(/)), goal: nil
        ))

        // MARK: The scale-out curve
        // Rounds go up and down the curve in turn, so drift hits every point alike.
        var rates: [Int: [Double]] = [:]
        for round in 1...max(1, rounds / 2) {
            for count in round.isMultiple(of: 2) ? processes.reversed() : processes {
                let rate = try await curvePoint(database: database, schema: "\(tag)_scale_\(count)_\(round)", processes: count, entries: scaleCount, port: server.port, made: made)
                rates[count, default: []].append(rate)
                print("  round \(round) \(count) drainer process\(count == 1 ? "" : "es"): \(Bench.format(rate)) claims/s")
            }
        }
        figures.curve = processes.map { ($0, rates[$0] ?? []) }
        return figures
    }

    /// A new queue in `schema`, recorded in `made` (to drop at the end) once made: a failed
    /// open changed nothing.
    static func open(_ database: Server, schema: String, client: APIClient, durability: QueueDurability = .full, made: LockedSamples) async throws -> OfflineQueue {
        let queue = try await OfflineQueue.open(
            configuration: QueueConfiguration(path: database.queueURL(schema: schema), durability: durability, concurrency: concurrency),
            client: client, logger: quiet
        )
        made.add(schema)
        return queue
    }

    /// A new queue in `schema` filled with `count` POSTs to `url` (not measured), then one drain
    /// at concurrency 16, measured, and the queue closed.
    static func measuredDrain(database: Server, schema: String, count: Int, url: String, client: APIClient, made: LockedSamples) async throws -> Measured {
        // `.normal`, as the SQLite drain figure: settlements commit asynchronously.
        let queue = try await open(database, schema: schema, client: client, durability: .normal, made: made)
        try await QueueBench.fill(queue, count: count, url: url)
        let measured = try await Measured.of(count: count) {
            let start = ContinuousClock.now
            let summary = try await queue.drain()
            let elapsed = ContinuousClock.now - start
            guard summary.delivered == count else { throw BenchError("drained \(summary.delivered) of \(count): \(summary)") }
            return Bench.rate(count, elapsed)
        }
        await queue.close()
        return measured
    }

    /// One point of the scale-out curve: `entries` POSTs to the bench server on `port` put in
    /// `schema`, then drained by `processes` drainer processes at once; claims per second.
    static func curvePoint(database: Server, schema: String, processes: Int, entries: Int, port: Int, made: LockedSamples) async throws -> Double {
        let offline = APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
        let queue = try await open(database, schema: schema, client: offline, made: made)
        try await QueueBench.fill(queue, count: entries, url: "http://127.0.0.1:\(port)/events")
        await queue.close()
        return try await scaleOut(processes: processes, url: database.queueURL(schema: schema), port: port, expected: entries)
    }

    /// The curve as a table: processes, median claims per second, and the rate against one process.
    static func curve(_ curve: [(processes: Int, rates: [Double])], entries: Int) {
        guard let one = curve.first(where: { $0.processes == 1 && !$0.rates.isEmpty }).map({ Goals.median($0.rates) }) else { return }
        print("\n| drainer processes | claims/s (median) | rounds | vs 1 process |")
        print("|---|---|---|---|")
        for (processes, rates) in curve where !rates.isEmpty {
            let median = Goals.median(rates)
            print("| \(processes) | \(Bench.format(median)) | \(rates.map(Bench.format).joined(separator: ", ")) | \(String(format: "%.2f", median / one)) |")
        }
        print("(\(entries) entries per point, each process drains at concurrency \(concurrency))")
    }

    /// Drops the benchmark's schemas.
    static func drop(_ schemas: [String], raw: PostgresClient) async {
        for schema in schemas {
            do {
                try await raw.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"), logger: quiet)
            } catch {
                print("could not drop schema \(schema): \(String(reflecting: error))")
            }
        }
    }

    // MARK: - Enqueue

    /// `count` raw inserts of the row `OfflineQueue.enqueue` writes, `concurrency` at a time,
    /// each in its own transaction with the notification the queue sends.
    static func rawInserts(count: Int, concurrency: Int, schema: String, client: PostgresClient) async throws -> Double {
        let insert = """
            INSERT INTO "\(schema)".entry (idempotency_key, method, url, headers, body, body_ref, body_length, scopes, name,
                group_key, priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', 0, $13, $13, $14)
            ON CONFLICT (idempotency_key) DO NOTHING
            RETURNING id
            """
        let channel = schema + ".enqueued"
        let headerText = QueueBench.headers.map { "\($0.name): \($0.value)\n" }.joined()
        let next = IndexDispenser()
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while let index = next.take(below: count) {
                        let body = QueueBench.body(index)
                        let now = Date().timeIntervalSince1970
                        var binds = PostgresBindings(capacity: 14)
                        binds.append(UUID().uuidString.lowercased())
                        binds.append("POST")
                        binds.append("http://127.0.0.1:8080/events")
                        binds.append(headerText)
                        try binds.append(body)
                        binds.appendNull()
                        binds.append(Int64(body.count))
                        binds.append("")
                        binds.append("POST /events")
                        binds.appendNull()
                        binds.append(Int32(0))
                        binds.appendNull()
                        binds.append(now)
                        binds.append(now)
                        let query = PostgresQuery(unsafeSQL: insert, binds: binds)
                        try await client.withTransaction(logger: quiet) { connection in
                            var ids: [Int64] = []
                            for try await id in try await connection.query(query, logger: quiet).decode(Int64.self) { ids.append(id) }
                            guard ids.count == 1 else { throw BenchError("the raw insert returned \(ids.count) ids") }
                            try await connection.query("SELECT pg_notify(\(channel), '')", logger: quiet)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return Bench.rate(count, ContinuousClock.now - start)
    }

    /// `count` calls of `queue.enqueue(method:url:headers:body:)`, `concurrency` at a time.
    static func queueEnqueues(count: Int, concurrency: Int, queue: OfflineQueue) async throws -> Double {
        let next = IndexDispenser()
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while let index = next.take(below: count) {
                        _ = try await queue.enqueue(method: "POST", url: "http://127.0.0.1:8080/events", headers: QueueBench.headers, body: .data(QueueBench.body(index)))
                    }
                }
            }
            try await group.waitForAll()
        }
        return Bench.rate(count, ContinuousClock.now - start)
    }
}
