// `courier-bench --goals`: every figure of the performance issue in one run, each against its
// raw baseline measured in the same run, printed as one table with the goals.
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
import OfflineQueue

enum Goals {
    /// One figure of the table.
    struct Result {
        let figure: String
        /// Rates over all rounds, in calls (or entries) per second.
        let baseline: Double
        let courier: Double
        let unit: String
        /// The median of the per-round ratios.
        let ratio: Double
        let goal: Double?
        /// What one call is worth in `unit` (a 10 MiB body is 10 MiB).
        var perUnit: Double = 1
    }

    /// The queue's two figures: one durable enqueue against one raw SQLite insert of the same
    /// row, and a drain of 10,000 POSTs (NORMAL, concurrency 16) against raw AsyncHTTPClient
    /// posting the same bodies; `rounds` alternating rounds each.
    static func queue(server: ServerProcess, rounds: Int) async throws -> [Result] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-goals-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var results: [Result] = []
        // BENCH_ONLY=drain runs only the drains (for perf); BENCH_ONLY=queue-drain only the queue's.
        let only = ProcessInfo.processInfo.environment["BENCH_ONLY"]
        if only == "drain" || only == "queue-drain" {
            let client = APIClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, transport: AsyncHTTPClientTransport())
            let raw = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
            for round in 1...rounds where only == "drain" {
                let start = Variant.processCPUTime()
                let rate = try await QueueBench.rawPosts(count: 10_000, url: "http://127.0.0.1:\(server.port)/events", client: raw)
                print("  round \(round) raw: \(Bench.format(rate)) req/s; \(Bench.format(Bench.micros(Variant.processCPUTime() - start, 10_000))) µs CPU per request")
            }
            try await raw.shutdown()
            for round in 1...rounds {
                let queue = try OfflineQueue(configuration: QueueConfiguration(path: folder.appendingPathComponent("only-\(round).db").path, durability: .normal, concurrency: 16), client: client)
                let beforeFill = Variant.processCPUTime()
                try await QueueBench.fill(queue, count: 10_000, url: "http://127.0.0.1:\(server.port)/events")
                let cpu = Variant.processCPUTime()
                let start = ContinuousClock.now
                let summary = try await queue.drain()
                let rate = Bench.rate(summary.delivered, ContinuousClock.now - start)
                print("  round \(round) drain: \(Bench.format(rate)) entries/s; \(Bench.format(Bench.micros(Variant.processCPUTime() - cpu, 10_000))) µs CPU per entry (the fill: \(Bench.format(Bench.micros(cpu - beforeFill, 10_000))) µs per entry)")
            }
            return []
        }

        // BENCH_ONLY=drain-ceiling: raw POSTs, the same POSTs through APIClient (no queue) and the
        // drain, alternating over one HTTPClient: how much of the drain's gap is the queue's.
        if only == "drain-ceiling" {
            let url = "http://127.0.0.1:\(server.port)/events"
            let (httpClient, client) = QueueBench.drainClients(port: server.port)
            _ = try await QueueBench.rawPosts(count: 2_000, url: url, client: httpClient)
            _ = try await QueueBench.clientPosts(count: 2_000, path: "/events", client: client)
            var rates: [String: [Double]] = [:], cpu: [String: [Double]] = [:], idle: [String: [Double]] = [:]
            for round in 1...rounds {
                // Each step: requests per second, the process's CPU per request and the machine's
                // idle share (the drain's without its fill).
                let steps: [(String, () async throws -> QueueBench.Measured)] = [
                    ("raw", { try await QueueBench.measured { try await QueueBench.rawPosts(count: 10_000, url: url, client: httpClient) } }),
                    ("client", { try await QueueBench.measured { try await QueueBench.clientPosts(count: 10_000, path: "/events", client: client) } }),
                    ("drain", {
                        let path = folder.appendingPathComponent("ceiling-\(round).db").path
                        return try await QueueBench.measuredDrain(count: 10_000, url: url, client: client, path: path, durability: .normal)
                    }),
                ]
                for (name, step) in round.isMultiple(of: 2) ? steps.reversed() : steps {
                    let result = try await step()
                    rates[name, default: []].append(result.rate)
                    cpu[name, default: []].append(result.cpu)
                    idle[name, default: []].append(result.idle)
                }
                let line = ["raw", "client", "drain"].map { name in
                    "\(name == "client" ? "APIClient" : name) \(Bench.format(rates[name]!.last!))/s, \(Bench.format(cpu[name]!.last!)) µs CPU, \(Int((idle[name]!.last! * 100).rounded())) % idle"
                }
                print("  round \(round): " + line.joined(separator: "; "))
            }
            try await httpClient.shutdown()
            let rawRate = median(rates["raw"]!), clientRate = median(rates["client"]!), drainRate = median(rates["drain"]!)
            print(String(format: "medians: APIClient/raw %.3f, drain/raw %.3f, drain/APIClient %.3f", clientRate / rawRate, drainRate / rawRate, drainRate / clientRate))
            return []
        }

        // BENCH_ONLY=enqueue runs only the queue's durable enqueues (for perf); raw-enqueue only
        // the raw SQLite inserts they are compared with.
        if only == "raw-enqueue" {
            for round in 1...rounds {
                let path = folder.appendingPathComponent("only-raw-\(round).db").path
                print("  round \(round) durable insert: raw SQLite \(Bench.format(try QueueBench.rawInserts(count: 2_000, batch: 1, path: path, durability: .full)))/s")
            }
            return []
        }
        if only == "enqueue" {
            for round in 1...rounds {
                let path = folder.appendingPathComponent("only-enqueue-\(round).db").path
                print("  round \(round) durable enqueue: OfflineQueue \(Bench.format(try await QueueBench.queueEnqueues(count: 2_000, batch: 1, path: path, durability: .full)))/s")
            }
            return []
        }

        // An fsync per enqueue: 500 of them take about a quarter of a second on each side.
        var raw: [Double] = [], queued: [Double] = []
        for round in 1...rounds {
            let rawPath = folder.appendingPathComponent("raw-\(round).db").path
            let queuePath = folder.appendingPathComponent("queue-\(round).db").path
            if round.isMultiple(of: 2) {
                queued.append(try await QueueBench.queueEnqueues(count: 500, batch: 1, path: queuePath, durability: .full))
                raw.append(try QueueBench.rawInserts(count: 500, batch: 1, path: rawPath, durability: .full))
            } else {
                raw.append(try QueueBench.rawInserts(count: 500, batch: 1, path: rawPath, durability: .full))
                queued.append(try await QueueBench.queueEnqueues(count: 500, batch: 1, path: queuePath, durability: .full))
            }
            print("  round \(round) durable enqueue: raw SQLite \(Bench.format(raw.last!))/s, OfflineQueue \(Bench.format(queued.last!))/s")
        }
        results.append(Result(figure: "one durable enqueue (FULL) vs one raw SQLite insert", baseline: median(raw), courier: median(queued), unit: "/s", ratio: median(zip(queued, raw).map(/)), goal: 0.85))

        // 16 callers enqueueing at once (a group commit shares their fsyncs) against the same raw
        // inserts, one transaction each: no goal, it shows what the group commit buys.
        var concurrent: [Double] = []
        for round in 1...rounds {
            let queue = try OfflineQueue(
                configuration: QueueConfiguration(path: folder.appendingPathComponent("concurrent-\(round).db").path, durability: .full),
                client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
            )
            let enqueue = Variant(name: "16 concurrent enqueuers") {
                _ = try await queue.enqueue(method: "POST", url: "http://127.0.0.1:8080/events", headers: QueueBench.headers, body: .data(QueueBench.body(1)))
            }
            concurrent.append(Bench.rate(2_000, try await enqueue.run(requests: 2_000, concurrency: 16).wall))
            print("  round \(round) 16 concurrent durable enqueuers: \(Bench.format(concurrent.last!))/s")
        }
        results.append(Result(figure: "16 concurrent durable enqueuers vs one raw SQLite insert at a time", baseline: median(raw), courier: median(concurrent), unit: "/s", ratio: median(concurrent) / median(raw), goal: nil))

        let url = "http://127.0.0.1:\(server.port)/events"
        let (httpClient, client) = QueueBench.drainClients(port: server.port)
        _ = try await QueueBench.rawPosts(count: 2_000, url: url, client: httpClient)
        raw = []; queued = []
        for round in 1...rounds {
            let path = folder.appendingPathComponent("drain-\(round).db").path
            if round.isMultiple(of: 2) {
                queued.append(try await QueueBench.queueDrain(count: 10_000, url: url, client: client, path: path, durability: .normal))
                raw.append(try await QueueBench.rawPosts(count: 10_000, url: url, client: httpClient))
            } else {
                raw.append(try await QueueBench.rawPosts(count: 10_000, url: url, client: httpClient))
                queued.append(try await QueueBench.queueDrain(count: 10_000, url: url, client: client, path: path, durability: .normal))
            }
            print("  round \(round) drain: raw AsyncHTTPClient \(Bench.format(raw.last!)) req/s, OfflineQueue.drain \(Bench.format(queued.last!)) entries/s")
        }
        try await httpClient.shutdown()
        results.append(Result(figure: "drain 10,000 POSTs, concurrency 16, NORMAL, vs raw AsyncHTTPClient", baseline: median(raw), courier: median(queued), unit: "/s", ratio: median(zip(queued, raw).map(/)), goal: 0.85))
        return results
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count.isMultiple(of: 2) ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
    }

    /// The table: each figure, both rates, the median ratio and whether it meets its goal.
    static func table(_ results: [Result]) {
        Swift.print("\n| figure | raw | Courier | ratio (median of rounds) | goal | met |")
        Swift.print("|---|---|---|---|---|---|")
        for result in results {
            let goal = result.goal.map { String(format: "≥ %.2f", $0) } ?? "—"
            let met = result.goal.map { result.ratio >= $0 ? "yes" : "**no**" } ?? "—"
            Swift.print("| \(result.figure) | \(Bench.format(result.baseline * result.perUnit)) \(result.unit) | \(Bench.format(result.courier * result.perUnit)) \(result.unit) | \(String(format: "%.3f", result.ratio)) | \(goal) | \(met) |")
        }
    }
}
