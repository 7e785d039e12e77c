// courier-bench: requests per second of a model call through Courier versus the same call
// made directly, against one loopback server, in one run. See Docs/Benchmarks.md.
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import Logging
import Plugins
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@main
enum Bench {
    static func main() async throws {
        if CommandLine.arguments.dropFirst().first == "--overhead" {
            try await Overhead.run(body: Data(#"{"page":1,"total":8,"items":["#.utf8) + Data((1...8).map { id in #"{"id":\#(id),"name":"Item number \#(id)","price":\#(Double(id) * 9.99),"tags":["alpha","beta","gamma"],"inStock":true}"# }.joined(separator: ",").utf8) + Data("]}".utf8), iterations: 20_000)
            return
        }
        if CommandLine.arguments.dropFirst().first == "--multipart" {
            try await MultipartBench.run(megabytes: Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 1024)
            return
        }
        if CommandLine.arguments.dropFirst().first == "--queue" {
            try await QueueBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
            return
        }
        // `--console`: the operator console over a 1,000,000-entry SQLite queue (ConsoleBench.swift).
        if CommandLine.arguments.dropFirst().first == "--console" {
            try await ConsoleBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
            return
        }
        // `--latency`: the drain to a server 20 ms away, HTTP/1.1 and HTTP/2 (LatencyBench.swift).
        if CommandLine.arguments.dropFirst().first == "--latency" {
            try await LatencyBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
            return
        }
        // `--growth`: each operation's cost as the queue grows to millions of entries (GrowthBench.swift).
        if CommandLine.arguments.dropFirst().first == "--growth" {
            try await GrowthBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
            return
        }
        if CommandLine.arguments.dropFirst().first == "--postgres" {
            try await PostgresBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
            return
        }
        if CommandLine.arguments.dropFirst().first == "--postgres-drainer" {
            let arguments = Array(CommandLine.arguments.dropFirst(2))
            guard arguments.count == 2, let port = Int(arguments[1]) else { throw BenchError("usage: courier-bench --postgres-drainer URL PORT") }
            try await PostgresBench.drainer(url: arguments[0], port: port)
            return
        }
        if CommandLine.arguments.dropFirst().first == "--queue-priority" {
            try await PriorityBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
            return
        }
        if CommandLine.arguments.dropFirst().first == "--queue-stub" {
            try await QueueBench.machinery(count: Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 20_000)
            return
        }
        if CommandLine.arguments.dropFirst().first == "--queue-memory" {
            let arguments = CommandLine.arguments.dropFirst(2).compactMap { Int($0) }
            try await QueueBench.memory(count: arguments.first ?? 100_000, port: arguments.dropFirst().first ?? 0)
            return
        }
        // `--goals`: every goal of the performance issue in one run, each ratio with its
        // bootstrap interval, CPU per call and an A/A control (Ratios.swift).
        if CommandLine.arguments.dropFirst().first == "--goals" {
            try await Ratios.run(options: Options(arguments: [CommandLine.arguments[0]] + CommandLine.arguments.dropFirst(2)))
            return
        }
        // `--sealed`: sealing on against off (enqueue, drain, 10 MiB bodies), as `--goals`
        // measures its ratios (Docs/Benchmarks.md, *Sealing at rest*).
        if CommandLine.arguments.dropFirst().first == "--sealed" {
            try await Ratios.run(options: Options(arguments: [CommandLine.arguments[0]] + CommandLine.arguments.dropFirst(2)), sealed: true)
            return
        }
        if CommandLine.arguments.dropFirst().first == "--goals-side" {
            try await RawTwin.serve(arguments: Array(CommandLine.arguments.dropFirst(2)))
            return
        }
        let options = Options(arguments: CommandLine.arguments)
        let server = try ServerProcess.start()
        let calls = HTTPCalls(port: server.port, concurrency: options.concurrency)
        let httpClient = calls.httpClient, courier = calls.courier
        let url = "http://127.0.0.1:\(server.port)/page"
        let rawAHC = calls.rawModelGET, courierAHC = calls.courierModelGET

        /// The transport alone, without APIClient: separates transport cost from client cost.
        let transport = courier.transport
        let transportOnly = Variant(name: "AsyncHTTPClientTransport.send + JSONDecoder") {
            let decoder = JSONDecoder()
            let head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/page")
            let response = try await transport.send(head, body: nil, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            let page = try decoder.decode(Page.self, from: body)
            precondition(page.items.count == 8)
        }

        /// APIClient's data call plus a local decoder: separates the model-call path from the rest.
        let dataRequest = Request<Data>.get(ProcessInfo.processInfo.environment["BENCH_ABSOLUTE"] == "1" ? "http://127.0.0.1:\(server.port)/page" : "/page")
        let courierData = Variant(name: "APIClient.data + JSONDecoder") {
            let decoder = JSONDecoder()
            let response = try await courier.data(dataRequest)
            let page = try decoder.decode(Page.self, from: response.body)
            precondition(page.items.count == 8)
        }

        // BENCH_PAIRS picks pairs by name: ahc, urlsession, plugins (the default), bodies.
        let wanted = Set((ProcessInfo.processInfo.environment["BENCH_PAIRS"] ?? "ahc,urlsession,plugins").split(separator: ",").map(String.init))
        var pairs: [Pair] = []
        if wanted.contains("ahc") { pairs.append(Pair(rawAHC, courierAHC)) }
        if wanted.contains("urlsession") { pairs.append(Pair(calls.rawURLSession, calls.courierURLSession)) }
        if wanted.contains("plugins") { pairs.append(Pair(courierAHC, calls.pluggedModelGET)) }
        if wanted.contains("bodies") {
            // A 10 MiB body costs about as much as 400 page calls: fewer of them, 4 at a time.
            pairs.append(Pair(calls.rawBig, calls.courierBig, scale: 40, concurrency: 4))
        }
        // BENCH_TRANSPORT=1 also compares the transport alone with raw AsyncHTTPClient.
        if ProcessInfo.processInfo.environment["BENCH_TRANSPORT"] == "1" {
            pairs.append(Pair(rawAHC, transportOnly))
            pairs.append(Pair(rawAHC, courierData))
        }

        // BENCH_LAYERS=1: the model call layer by layer (raw, transport, APIClient.data,
        // APIClient.model), alternating, each variant's client CPU per request.
        if ProcessInfo.processInfo.environment["BENCH_LAYERS"] == "1" {
            var layers = [rawAHC, transportOnly, courierData, courierAHC]
            // BENCH_SPIN_US=N adds a layer: the raw call plus N µs of pure CPU on the calling
            // task, to calibrate what a given cost measured in isolation does to these figures.
            if let spin = ProcessInfo.processInfo.environment["BENCH_SPIN_US"].flatMap({ Double($0) }) {
                layers.append(Variant(name: "raw AsyncHTTPClient + \(spin) µs of CPU") {
                    try await RawCalls.modelGET(url, client: httpClient)
                    let until = ContinuousClock.now + .microseconds(spin)
                    while ContinuousClock.now < until {}
                })
            }
            // BENCH_LAYER=N runs only layer N (0 to 3), for perf.
            if let only = ProcessInfo.processInfo.environment["BENCH_LAYER"].flatMap({ Int($0) }) { layers = [layers[only]] }
            var cpu: [String: [Double]] = [:], rates: [String: [Double]] = [:]
            for variant in layers { try await variant.run(requests: options.warmup, concurrency: options.concurrency) }
            for _ in 1...options.rounds {
                for variant in layers {
                    let measured = try await variant.run(requests: options.requests, concurrency: options.concurrency)
                    cpu[variant.name, default: []].append(micros(measured.cpu, options.requests))
                    rates[variant.name, default: []].append(rate(options.requests, measured.wall))
                }
            }
            for variant in layers {
                let values = cpu[variant.name]!.map { format($0) }.joined(separator: " ")
                print("\(variant.name): median \(String(format: "%.1f", Goals.median(cpu[variant.name]!))) µs CPU/request (rounds: \(values)), median \(format(Goals.median(rates[variant.name]!))) req/s")
            }
            server.stop()
            return
        }
        print("courier-bench: \(options.requests) requests x \(options.rounds) rounds per variant, \(options.concurrency) concurrent callers, server pid \(server.process.processIdentifier) on port \(server.port)")
        for pair in pairs {
            let requests = max(1, options.requests / pair.scale)
            let concurrency = pair.concurrency ?? options.concurrency
            try await pair.baseline.run(requests: max(1, options.warmup / pair.scale), concurrency: concurrency)
            try await pair.courier.run(requests: max(1, options.warmup / pair.scale), concurrency: concurrency)
            var baselineTimes: [Variant.Measurement] = []
            var courierTimes: [Variant.Measurement] = []
            for round in 1...options.rounds {
                // Alternate which side goes first so drift (caches, frequency, other load) hits both.
                let order = round.isMultiple(of: 2) ? [pair.courier, pair.baseline] : [pair.baseline, pair.courier]
                // BENCH_ONLY=baseline or BENCH_ONLY=courier runs one side alone (for profiling).
                let only = ProcessInfo.processInfo.environment["BENCH_ONLY"]
                for variant in order where only == nil || (only == "courier") == (variant.name == pair.courier.name) {
                    let measured = try await variant.run(requests: requests, concurrency: concurrency)
                    if variant.name == pair.baseline.name { baselineTimes.append(measured) } else { courierTimes.append(measured) }
                    print("  round \(round) \(variant.name): \(format(rate(requests, measured.wall))) req/s, \(format(micros(measured.cpu, requests))) µs CPU/request")
                }
            }
            let total = requests * options.rounds
            let baselineRate = rate(total, baselineTimes.map(\.wall).reduce(.zero, +))
            let courierRate = rate(total, courierTimes.map(\.wall).reduce(.zero, +))
            let baselineCPU = micros(baselineTimes.map(\.cpu).reduce(.zero, +), total)
            let courierCPU = micros(courierTimes.map(\.cpu).reduce(.zero, +), total)
            print("\(pair.baseline.name): \(format(baselineRate)) req/s, \(format(baselineCPU)) µs client CPU/request (\(total) requests)")
            print("\(pair.courier.name): \(format(courierRate)) req/s, \(format(courierCPU)) µs client CPU/request (\(total) requests)")
            let paired = zip(baselineTimes, courierTimes).map { base, courier in
                rate(requests, courier.wall) / rate(requests, base.wall)
            }.sorted()
            // BENCH_ONLY runs one side, so there is nothing to compare.
            guard !paired.isEmpty else { continue }
            let median = paired.count.isMultiple(of: 2)
                ? (paired[paired.count / 2 - 1] + paired[paired.count / 2]) / 2
                : paired[paired.count / 2]
            print("ratio \(pair.courier.name) / \(pair.baseline.name): \(String(format: "%.3f", courierRate / baselineRate)) (all requests), \(String(format: "%.3f", median)) (median of per-round ratios), \(String(format: "%.3f", baselineCPU / courierCPU)) (client CPU per request, inverted)")
        }

        try await httpClient.shutdown()
        server.stop()
    }

    /// A baseline and the Courier call it is compared with.
    struct Pair {
        let baseline: Variant
        let courier: Variant
        /// Requests per round are `--requests` divided by this (heavier calls run fewer times).
        let scale: Int
        /// Concurrent callers, when not `--concurrency`.
        let concurrency: Int?

        init(_ baseline: Variant, _ courier: Variant, scale: Int = 1, concurrency: Int? = nil) {
            self.baseline = baseline
            self.courier = courier
            self.scale = scale
            self.concurrency = concurrency
        }
    }

    static func rate(_ requests: Int, _ elapsed: Duration) -> Double {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(requests) / seconds
    }

    static func micros(_ cpu: Duration, _ requests: Int) -> Double {
        (Double(cpu.components.seconds) * 1e6 + Double(cpu.components.attoseconds) / 1e12) / Double(requests)
    }

    static func format(_ value: Double) -> String { String(format: "%.0f", value) }
}
