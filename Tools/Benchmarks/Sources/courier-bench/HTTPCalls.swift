import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The clients and the calls of the HTTP pairs against the bench server, made the same way in
/// every process that runs them (`courier-bench` and its A/A child), so a side differs from
/// its twin only by what it calls.
struct HTTPCalls: Sendable {
    /// One `HTTPClient` for both sides of the AsyncHTTPClient pairs: same pool, same event loops.
    let httpClient: HTTPClient
    /// Courier over ``httpClient``.
    let courier: APIClient
    let rawModelGET: Variant
    let courierModelGET: Variant
    /// ``courier`` with the plugins pair's five plugins and two interceptors.
    let pluggedModelGET: Variant
    /// Raw `URLSession.data(for:)` and Courier over `URLSessionTransport`, each its own session.
    let rawURLSession: Variant
    let courierURLSession: Variant
    /// The raw side's session (Courier's closes with its transport).
    let session: URLSession
    /// The server's 10 MiB body, collected into memory.
    let rawBig: Variant
    let courierBig: Variant

    /// The size of the bench server's `/big` body.
    static let bigBodySize = 10 << 20

    init(port: Int, concurrency: Int) {
        let base = "http://127.0.0.1:\(port)"
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
        let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let courier = APIClient(
            configuration: ClientConfiguration(baseURL: URL(string: base)!, timeout: .seconds(30)),
            transport: AsyncHTTPClientTransport(client: httpClient)
        )
        self.httpClient = httpClient
        self.courier = courier
        let pageRequest = Request<Page>.get("/page")
        let pageURL = base + "/page"
        rawModelGET = Variant(name: "raw AsyncHTTPClient") { try await RawCalls.modelGET(pageURL, client: httpClient) }
        courierModelGET = Variant(name: "APIClient + AsyncHTTPClientTransport") {
            let page = try await courier.model(pageRequest, as: Page.self)
            precondition(page.items.count == 8)
        }
        let plugged = APIClient(configuration: PluginsPair.plugged(courier.configuration), transport: courier.transport)
        pluggedModelGET = Variant(name: "APIClient + 5 plugins + 2 interceptors") {
            let page = try await plugged.model(pageRequest, as: Page.self)
            precondition(page.items.count == 8)
        }

        let session = URLSession(configuration: URLSessionTransport.defaultConfiguration())
        self.session = session
        rawURLSession = Variant(name: "raw URLSession") { try await RawCalls.modelGET(URL(string: pageURL)!, session: session) }
        let courierSession = APIClient(
            configuration: ClientConfiguration(baseURL: URL(string: base)!, timeout: .seconds(30)),
            // BENCH_URLSESSION_WHOLE=1: the opt-in completion-handler path for collected calls.
            transport: ProcessInfo.processInfo.environment["BENCH_URLSESSION_WHOLE"] == "1"
                ? URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration(), streamsCollectedBodies: false)
                : URLSessionTransport()
        )
        courierURLSession = Variant(name: "APIClient + URLSessionTransport") {
            let page = try await courierSession.model(pageRequest, as: Page.self)
            precondition(page.items.count == 8)
        }

        let bigURL = base + "/big"
        rawBig = Variant(name: "raw AsyncHTTPClient collect, 10 MiB") { try await RawCalls.collect(bigURL, size: Self.bigBodySize, client: httpClient) }
        let bigRequest = Request<Data>.get("/big")
        courierBig = Variant(name: "APIClient.data(Request<Data>), 10 MiB") {
            let response = try await courier.data(bigRequest)
            precondition(response.body.count == Self.bigBodySize)
        }
    }

    func shutdown() async throws {
        session.invalidateAndCancel()
        try await httpClient.shutdown()
    }
}
