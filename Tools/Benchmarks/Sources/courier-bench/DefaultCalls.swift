import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore

/// The model-GET pairs in the configurations a user gets by default, made the same way in
/// `courier-bench` and its A/A child: `APIClient(baseURL:transport: AsyncHTTPClientTransport())`
/// (its own `HTTPClient`: decompression on with a ratio limit of 25, a 60-second read timeout, 8
/// connections per host) against `HTTPClient(eventLoopGroupProvider: .singleton)` in its
/// default configuration (decompression off, no read timeout, 8 connections per host). The
/// gzip pair asks for the server's gzipped page (`/page.gz`), against raw AsyncHTTPClient with
/// decompression on (ratio 25), as a user expecting compressed answers would configure it.
struct DefaultCalls: Sendable {
    let rawClient: HTTPClient
    let transport: AsyncHTTPClientTransport
    let raw: Variant
    let courier: Variant

    init(port: Int, gzip: Bool) {
        let base = "http://127.0.0.1:\(port)"
        let path = gzip ? "/page.gz" : "/page"
        let rawClient = gzip
            ? HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(decompression: .enabled(limit: .ratio(25))))
            : HTTPClient(eventLoopGroupProvider: .singleton)
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(baseURL: URL(string: base)!, transport: transport)
        let request = Request<Page>.get(path)
        let url = base + path
        self.rawClient = rawClient
        self.transport = transport
        raw = Variant(name: gzip ? "raw AsyncHTTPClient, decompression on" : "raw AsyncHTTPClient, defaults") {
            try await RawCalls.modelGET(url, client: rawClient)
        }
        courier = Variant(name: "APIClient + AsyncHTTPClientTransport(), defaults") {
            let page = try await client.model(request, as: Page.self)
            precondition(page.items.count == 8)
        }
    }

    func shutdown() async throws {
        try await rawClient.shutdown()
        try await transport.shutdown()
    }
}
