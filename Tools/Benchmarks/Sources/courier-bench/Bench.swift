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
        // `--goals` runs every figure of the performance issue in one run and prints them
        // against their goals; the other options still apply.
        let goals = CommandLine.arguments.dropFirst().first == "--goals"
        let options = Options(arguments: goals ? [CommandLine.arguments[0]] + CommandLine.arguments.dropFirst(2) : CommandLine.arguments)
        let server = try ServerProcess.start()
        let url = "http://127.0.0.1:\(server.port)/page"

        // One HTTPClient for both sides of the AsyncHTTPClient pair: same pool, same event loops.
        var clientConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        clientConfiguration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: options.concurrency)
        let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: clientConfiguration)
        let courier = APIClient(
            configuration: ClientConfiguration(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: .seconds(30)),
            transport: AsyncHTTPClientTransport(client: httpClient)
        )
        let pageRequest = Request<Page>.get("/page")

        /// Raw AsyncHTTPClient: execute, collect the body, decode.
        let rawAHC = Variant(name: "raw AsyncHTTPClient") {
            let decoder = JSONDecoder()
            var request = HTTPClientRequest(url: url)
            request.method = .GET
            let response = try await httpClient.execute(request, timeout: .seconds(30))
            guard response.status == .ok else { throw BenchError("status \(response.status)") }
            let body = try await response.body.collect(upTo: 1 << 20)
            let page = try decoder.decode(Page.self, from: body)
            precondition(page.items.count == 8)
        }

        /// The same model call through Courier.
        let courierAHC = Variant(name: "APIClient + AsyncHTTPClientTransport") {
            let page = try await courier.model(pageRequest, as: Page.self)
            precondition(page.items.count == 8)
        }

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

        // MARK: URLSession pair
        let session = URLSession(configuration: URLSessionTransport.defaultConfiguration())
        let pageURL = URL(string: url)!
        let rawURLSession = Variant(name: "raw URLSession") {
            let (body, response) = try await session.data(for: URLRequest(url: pageURL))
            guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchError("status") }
            let page = try JSONDecoder().decode(Page.self, from: body)
            precondition(page.items.count == 8)
        }
        let courierSession = APIClient(
            configuration: ClientConfiguration(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: .seconds(30)),
            // BENCH_URLSESSION_WHOLE=1: the opt-in completion-handler path for collected calls.
            transport: ProcessInfo.processInfo.environment["BENCH_URLSESSION_WHOLE"] == "1"
                ? URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration(), streamsCollectedBodies: false)
                : URLSessionTransport()
        )
        let courierURLSession = Variant(name: "APIClient + URLSessionTransport") {
            let page = try await courierSession.model(pageRequest, as: Page.self)
            precondition(page.items.count == 8)
        }

        // MARK: Plugins: five plugins and two interceptors versus none (issue "Plugins")
        let pluggedConfiguration = PluginsPair.plugged(courier.configuration)
        let plugged = APIClient(configuration: pluggedConfiguration, transport: courier.transport)
        let courierPlugged = Variant(name: "APIClient + 5 plugins + 2 interceptors") {
            let page = try await plugged.model(pageRequest, as: Page.self)
            precondition(page.items.count == 8)
        }

        // MARK: Large bodies: 10 MiB read into memory, 4 at a time
        let bigURL = "http://127.0.0.1:\(server.port)/big"
        let rawBig = Variant(name: "raw AsyncHTTPClient collect, 10 MiB") {
            var request = HTTPClientRequest(url: bigURL)
            request.method = .GET
            let response = try await httpClient.execute(request, timeout: .seconds(30))
            guard response.status == .ok else { throw BenchError("status \(response.status)") }
            let body = try await response.body.collect(upTo: 16 << 20)
            precondition(body.readableBytes == bigBodySize)
        }
        let bigRequest = Request<Data>.get("/big")
        let courierBig = Variant(name: "APIClient.data(Request<Data>), 10 MiB") {
            let response = try await courier.data(bigRequest)
            precondition(response.body.count == bigBodySize)
        }

        // BENCH_PAIRS picks pairs by name: ahc, urlsession, plugins (the default), bodies.
        let defaultPairs = goals ? "ahc,urlsession,plugins,bodies" : "ahc,urlsession,plugins"
        let wanted = Set((ProcessInfo.processInfo.environment["BENCH_PAIRS"] ?? defaultPairs).split(separator: ",").map(String.init))
        var pairs: [Pair] = []
        if wanted.contains("ahc") { pairs.append(Pair(rawAHC, courierAHC, figure: "APIClient + AsyncHTTPClientTransport vs raw AsyncHTTPClient (model GET)", goal: 0.97)) }
        if wanted.contains("urlsession") { pairs.append(Pair(rawURLSession, courierURLSession, figure: "APIClient + URLSessionTransport vs raw URLSession", goal: 0.95)) }
        if wanted.contains("plugins") { pairs.append(Pair(courierAHC, courierPlugged, figure: "5 plugins + 2 interceptors vs none", goal: 0.95)) }
        if wanted.contains("bodies") {
            // A 10 MiB body costs about as much as 400 page calls: fewer of them, 4 at a time.
            pairs.append(Pair(rawBig, courierBig, figure: "10 MiB bodies into memory, 4 at a time", goal: 0.95, scale: 40, concurrency: 4))
        }
        // BENCH_TRANSPORT=1 also compares the transport alone with raw AsyncHTTPClient.
        if ProcessInfo.processInfo.environment["BENCH_TRANSPORT"] == "1" {
            pairs.append(Pair(rawAHC, transportOnly, figure: "transport alone", goal: nil))
            pairs.append(Pair(rawAHC, courierData, figure: "APIClient.data", goal: nil))
        }

        // BENCH_LAYERS=1: the model call layer by layer (raw, transport, APIClient.data,
        // APIClient.model), alternating, each variant's client CPU per request.
        if ProcessInfo.processInfo.environment["BENCH_LAYERS"] == "1" {
            var layers = [rawAHC, transportOnly, courierData, courierAHC]
            // BENCH_SPIN_US=N adds a layer: the raw call plus N µs of pure CPU on the calling
            // task, to calibrate what a given cost measured in isolation does to these figures.
            if let spin = ProcessInfo.processInfo.environment["BENCH_SPIN_US"].flatMap({ Double($0) }) {
                layers.append(Variant(name: "raw AsyncHTTPClient + \(spin) µs of CPU") {
                    var request = HTTPClientRequest(url: url)
                    request.method = .GET
                    let response = try await httpClient.execute(request, timeout: .seconds(30))
                    let body = try await response.body.collect(upTo: 1 << 20)
                    let page = try JSONDecoder().decode(Page.self, from: body)
                    precondition(page.items.count == 8)
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
        var results: [Goals.Result] = []
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
            results.append(Goals.Result(figure: pair.figure, baseline: baselineRate, courier: courierRate, unit: pair.scale > 1 ? "MiB/s" : "req/s", ratio: median, goal: pair.goal, perUnit: pair.scale > 1 ? Double(bigBodySize) / 1_048_576 : 1))
        }

        try await httpClient.shutdown()
        if goals {
            results += try await Goals.queue(server: server, rounds: options.rounds)
            // The PostgreSQL figures need a server given by the caller (none is started here).
            var curve: [(processes: Int, rates: [Double])] = []
            if let database = try PostgresBench.configuredServer() {
                let figures = try await PostgresBench.figures(database: database, server: server, rounds: options.rounds)
                results += figures.ratios
                curve = figures.curve
            } else {
                print(PostgresBench.skipped)
            }
            Goals.table(results)
            PostgresBench.curve(curve, entries: 8_000)
        }
        server.stop()
    }

    /// The size of the bench server's `/big` body.
    static let bigBodySize = 10 << 20

    /// A baseline and the Courier call it is compared with.
    struct Pair {
        let baseline: Variant
        let courier: Variant
        /// The figure's name in the `--goals` table.
        let figure: String
        let goal: Double?
        /// Requests per round are `--requests` divided by this (heavier calls run fewer times).
        let scale: Int
        /// Concurrent callers, when not `--concurrency`.
        let concurrency: Int?

        init(_ baseline: Variant, _ courier: Variant, figure: String, goal: Double?, scale: Int = 1, concurrency: Int? = nil) {
            self.baseline = baseline
            self.courier = courier
            self.figure = figure
            self.goal = goal
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
