import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Benchmark
import Foundation
import HTTPCore

/// Model GETs with each side as a user gets it by default: `APIClient(baseURL:transport:)` over
/// `AsyncHTTPClientTransport()` (its own `HTTPClient`, decompression on with a ratio limit of
/// 25, a 60-second read timeout) against raw AsyncHTTPClient in its own default configuration
/// (`HTTPClient(eventLoopGroupProvider: .singleton)`: decompression off, no read timeout).
/// `model-GET-gzip`: the server's gzipped page (`/page.gz`, `Content-Encoding: gzip`), against
/// raw AsyncHTTPClient with decompression on (ratio 25), as a user who expects compressed
/// answers would configure it.
enum DefaultsScenarios {
    static let pageRequest = Request<Page>.get("/page")
    static let gzippedPageRequest = Request<Page>.get("/page.gz")

    /// Raw AsyncHTTPClient as `HTTPClient(eventLoopGroupProvider: .singleton)` makes it.
    static let rawDefault = HTTPClient(eventLoopGroupProvider: .singleton)
    /// The same with the read timeout `AsyncHTTPClientTransport()` sets (60 s): AsyncHTTPClient
    /// then schedules a timer when the request is sent and again at the head and at each part of
    /// the body, about five allocations each. Not a pair of its own: it shows what of the
    /// defaults pair's difference is that timer.
    static let rawReadTimeout: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.read = .seconds(60)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
    /// The same with decompression on, for the gzipped page.
    static let rawDecompressing = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: HTTPClient.Configuration(decompression: .enabled(limit: .ratio(25)))
    )
    /// Courier as `APIClient(baseURL:transport: AsyncHTTPClientTransport())` makes it.
    static let courier = APIClient(baseURL: Loopback.baseURL, transport: AsyncHTTPClientTransport())

    static func register() {
        Benchmark("model-GET-defaults.raw-AsyncHTTPClient") { benchmark in
            let url = Loopback.baseURL.appendingPathComponent("page").absoluteString
            try await Measure.run(benchmark) {
                for _ in benchmark.scaledIterations { try await RawCalls.modelGET(url, client: rawDefault) }
            }
        }
        Benchmark("model-GET-defaults.raw-AsyncHTTPClient-60s-read-timeout") { benchmark in
            let url = Loopback.baseURL.appendingPathComponent("page").absoluteString
            try await Measure.run(benchmark) {
                for _ in benchmark.scaledIterations { try await RawCalls.modelGET(url, client: rawReadTimeout) }
            }
        }
        Benchmark("model-GET-defaults.Courier", configuration: HTTPScenarios.socketConfiguration) { benchmark in
            let client = courier
            try await Measure.run(benchmark) {
                for _ in benchmark.scaledIterations {
                    let page = try await client.model(pageRequest, as: Page.self)
                    precondition(page.items.count == 8)
                }
            }
        }
        Benchmark("model-GET-gzip.raw-AsyncHTTPClient") { benchmark in
            let url = Loopback.baseURL.appendingPathComponent("page.gz").absoluteString
            try await Measure.run(benchmark) {
                for _ in benchmark.scaledIterations { try await RawCalls.modelGET(url, client: rawDecompressing) }
            }
        }
        Benchmark("model-GET-gzip.Courier", configuration: HTTPScenarios.socketConfiguration) { benchmark in
            let client = courier
            try await Measure.run(benchmark) {
                for _ in benchmark.scaledIterations {
                    let page = try await client.model(gzippedPageRequest, as: Page.self)
                    precondition(page.items.count == 8)
                }
            }
        }
    }
}
