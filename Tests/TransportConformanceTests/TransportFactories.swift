import AsyncHTTPClientTransport
import HTTPCore

/// Every transport the conformance suite runs against. To add one, append one line here
/// (a `TransportFactory` with its name, capabilities and how to make and shut it down).
enum TransportFactories {
    static let all: [TransportFactory] = [
        .asyncHTTPClient,
        .urlSession,
        .urlSessionStreaming,
    ]
}

/// How the suite makes one kind of transport, and what it can do.
struct TransportFactory: Sendable, CustomStringConvertible {
    /// What a transport can and cannot do; a test that depends on a capability says what it
    /// checks instead, and the factory's doc comment says why the transport lacks it.
    struct Capabilities: Sendable {
        /// Speaks HTTP/2 when a TLS server offers it through ALPN.
        var negotiatesHTTP2 = true
        /// Can trust a CA given in ``Setup/trustedCAFile``.
        var trustsCustomCA = true
    }

    /// What a test needs of the transport it makes.
    struct Setup: Sendable {
        /// A PEM file of a CA to trust besides the system's roots.
        var trustedCAFile: String?
        /// How long the server may stay silent while a response body is read.
        var readTimeout: Duration?
    }

    let name: String
    let capabilities: Capabilities
    let make: @Sendable (Setup) -> any Transport
    let shutdown: @Sendable (any Transport) async throws -> Void

    var description: String { name }
}

/// The URLSession transports the tests share, one per configuration, instead of one per test:
/// FoundationNetworking on Linux can crash its dispatch manager thread when sessions are torn
/// down while others run (swift-corelibs-foundation #4791, #5469). The setup a test asks for
/// changes nothing for them (they trust no custom CA and take no read timeout).
private let sharedURLSession = URLSessionTransport()
private let sharedURLSessionCollecting = URLSessionTransport(configuration: URLSessionTransport.defaultConfiguration(), streamsCollectedBodies: false)

extension TransportFactory {
    /// `AsyncHTTPClientTransport` with its own `HTTPClient`.
    static let asyncHTTPClient = TransportFactory(
        name: "AsyncHTTPClientTransport",
        capabilities: Capabilities(negotiatesHTTP2: true),
        make: { setup in
            var configuration = AsyncHTTPClientTransport.Configuration()
            if let file = setup.trustedCAFile { configuration.trustRootCertificates(inPEMFile: file) }
            if let readTimeout = setup.readTimeout { configuration.readTimeout = readTimeout }
            return AsyncHTTPClientTransport(configuration: configuration)
        },
        shutdown: { transport in try await (transport as? AsyncHTTPClientTransport)?.shutdown() }
    )

    /// `URLSessionTransport` (FoundationNetworking on Linux). It cannot trust a CA of the
    /// test's (Linux URLSession trusts the system store only, so the suite checks only that the
    /// untrusted certificate is refused), and speaks HTTP/1.1 to nginx.
    static let urlSession = TransportFactory(
        name: "URLSessionTransport",
        capabilities: Capabilities(negotiatesHTTP2: false, trustsCustomCA: false),
        make: { _ in sharedURLSession },
        shutdown: { _ in }
    )

    /// `URLSessionTransport` without `streamsCollectedBodies`: data and model calls of safe
    /// methods go as completion-handler tasks instead of streaming through the delegate.
    static let urlSessionStreaming = TransportFactory(
        name: "URLSessionTransport (streamsCollectedBodies: false)",
        capabilities: Capabilities(negotiatesHTTP2: false, trustsCustomCA: false),
        make: { _ in sharedURLSessionCollecting },
        shutdown: { _ in }
    )
}
