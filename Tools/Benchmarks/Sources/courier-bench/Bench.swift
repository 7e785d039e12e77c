// courier-bench: requests per second of a model call through Courier versus the same call
// made directly, against one loopback server, in one run. See Docs/Benchmarks.md.
import AsyncHTTPClient
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import NIOCore
import NIOFoundationCompat

@main
enum Bench {
    static func main() async throws {
        let options = Options(arguments: CommandLine.arguments)
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

        // MARK: URLSession pair (added by the lead)
        // Define `rawURLSession` (URLSession.data(for:) + JSONDecoder) and `courierURLSession`
        // (APIClient + URLSessionTransport) like the two variants above, and list the pair here:
        // let pairs = [(rawAHC, courierAHC), (rawURLSession, courierURLSession)]
        let pairs: [(baseline: Variant, courier: Variant)] = [(rawAHC, courierAHC)]

        print("courier-bench: \(options.requests) requests x \(options.rounds) rounds per variant, \(options.concurrency) concurrent callers, server pid \(server.process.processIdentifier) on port \(server.port)")
        for pair in pairs {
            try await pair.baseline.run(requests: options.warmup, concurrency: options.concurrency)
            try await pair.courier.run(requests: options.warmup, concurrency: options.concurrency)
            var baselineTimes: [Duration] = []
            var courierTimes: [Duration] = []
            for round in 1...options.rounds {
                // Alternate which side goes first so drift (caches, frequency, other load) hits both.
                let order = round.isMultiple(of: 2) ? [pair.courier, pair.baseline] : [pair.baseline, pair.courier]
                for variant in order {
                    let elapsed = try await variant.run(requests: options.requests, concurrency: options.concurrency)
                    if variant.name == pair.baseline.name { baselineTimes.append(elapsed) } else { courierTimes.append(elapsed) }
                    print("  round \(round) \(variant.name): \(format(rate(options.requests, elapsed))) req/s")
                }
            }
            let total = options.requests * options.rounds
            let baselineRate = rate(total, baselineTimes.reduce(.zero, +))
            let courierRate = rate(total, courierTimes.reduce(.zero, +))
            print("\(pair.baseline.name): \(format(baselineRate)) req/s (\(total) requests)")
            print("\(pair.courier.name): \(format(courierRate)) req/s (\(total) requests)")
            print("ratio \(pair.courier.name) / \(pair.baseline.name): \(String(format: "%.3f", courierRate / baselineRate))")
        }

        try await httpClient.shutdown()
        server.stop()
    }

    static func rate(_ requests: Int, _ elapsed: Duration) -> Double {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(requests) / seconds
    }

    static func format(_ value: Double) -> String { String(format: "%.0f", value) }
}
