// The figures' table of `courier-bench --postgres` (median of rounds, against a goal where one
// applies), and the `--goals` diagnostics that run one part of the queue's figures alone
// (`BENCH_ONLY`, for perf). `--goals` itself is in Ratios.swift.
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
    }

    /// The parts `BENCH_ONLY` can pick with `--goals`.
    static let diagnostics: Set<String> = ["drain", "queue-drain", "drain-ceiling", "enqueue", "raw-enqueue"]

    /// Runs the part of the queue's figures that `only` names, `rounds` times, and prints it.
    static func diagnostic(_ only: String, server: ServerProcess, rounds: Int) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-goals-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // BENCH_ONLY=drain runs only the drains (for perf); BENCH_ONLY=queue-drain only the queue's.
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
            return
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
                let steps: [(String, () async throws -> Measured)] = [
                    ("raw", { try await Measured.of(count: 10_000) { try await QueueBench.rawPosts(count: 10_000, url: url, client: httpClient) } }),
                    ("client", { try await Measured.of(count: 10_000) { try await QueueBench.clientPosts(count: 10_000, path: "/events", client: client) } }),
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
            return
        }

        // BENCH_ONLY=enqueue runs only the queue's durable enqueues (for perf); raw-enqueue only
        // the raw SQLite inserts they are compared with.
        if only == "raw-enqueue" {
            for round in 1...rounds {
                let path = folder.appendingPathComponent("only-raw-\(round).db").path
                print("  round \(round) durable insert: minimal raw SQLite \(Bench.format(try await QueueBench.minimalInserts(count: 2_000, path: path).rate))/s")
            }
            return
        }
        if only == "enqueue" {
            for round in 1...rounds {
                let path = folder.appendingPathComponent("only-enqueue-\(round).db").path
                print("  round \(round) durable enqueue: OfflineQueue \(Bench.format(try await QueueBench.queueEnqueues(count: 2_000, batch: 1, path: path, durability: .full).rate))/s")
            }
            return
        }
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
            Swift.print("| \(result.figure) | \(Bench.format(result.baseline)) \(result.unit) | \(Bench.format(result.courier)) \(result.unit) | \(String(format: "%.3f", result.ratio)) | \(goal) | \(met) |")
        }
    }
}
