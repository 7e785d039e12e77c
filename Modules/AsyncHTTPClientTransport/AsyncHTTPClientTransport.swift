public import AsyncHTTPClient
public import HTTPCore
public import HTTPTypes
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// A `Transport` over AsyncHTTPClient (SwiftNIO): pooled connections, HTTP/1.1 and HTTP/2,
/// streamed bodies both ways. The fast default on Linux.
///
/// The transport does one exchange and nothing more; `APIClient` follows redirects, so the
/// `HTTPClient` this transport creates has redirects turned off (an injected client must have
/// them off too). Bodies stream in both directions: request bodies are read chunk by chunk from
/// `RequestBody.makeStream(chunkSize:)`, and response bodies arrive as a `ByteStream` whose
/// chunks are the buffers NIO read from the socket.
///
/// ```swift
/// let transport = AsyncHTTPClientTransport()
/// let client = APIClient(baseURL: URL(string: "https://api.example.com")!, transport: transport)
/// let user: User = try await client.model(UserAPI.me)
/// try await transport.shutdown()
/// ```
///
/// Errors are always `NetworkError`: `NetworkError.cancelled` when the calling task was
/// cancelled (the request is cancelled on the wire), otherwise `NetworkError.transport(_:)`
/// with the `TransportFailure.Kind` from the table in `Docs/Transports.md`.
public final class AsyncHTTPClientTransport: Transport {
    /// The AsyncHTTPClient this transport sends through (the requests that go directly, when
    /// ``Configuration/proxy`` is set).
    public let client: HTTPClient
    /// The proxies of ``Configuration/proxy``, a client for each (AsyncHTTPClient's proxy is one
    /// per client); empty without one.
    private let proxied: [ProxyServer: HTTPClient]
    private let proxySettings: ProxySettings?
    /// ``Configuration/tlsByOrigin``: a request to one of these origins carries its settings.
    private let tlsByOrigin: [Origin: TLSConfiguration]
    /// How far a `br` body may expand (``Configuration/decompression``).
    private let brotliLimit: DecodingLimit
    /// Whether ``shutdown()`` (or deinit) shuts ``client`` down: true when the transport made it.
    private let ownsClient: Bool
    /// Whether the client decodes gzip and deflate bodies (then other codings are refused).
    private let decodesBodies: Bool
    private let shutdownState = LockedBox(false)
    /// The HTTP/1.1 connections to one host, when every request to a host goes over HTTP/1.1
    /// (``Configuration/httpVersion`` `.http1Only`); `nil` when ALPN may choose HTTP/2.
    private let http1Connections: (always: Bool, perHost: Int)?

    /// A transport with its own `HTTPClient` on the shared NIO event loop group, configured by
    /// `configuration`. Call ``shutdown()`` when done; a transport dropped without it shuts its
    /// client down in the background.
    public init(configuration: Configuration = Configuration()) {
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration.clientConfiguration)
        var proxied: [ProxyServer: HTTPClient] = [:]
        for server in [configuration.proxy?.http, configuration.proxy?.https].compactMap({ $0 }) where proxied[server] == nil {
            proxied[server] = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration.clientConfiguration(proxy: server))
        }
        self.proxied = proxied
        self.proxySettings = proxied.isEmpty ? nil : configuration.proxy
        self.tlsByOrigin = configuration.tlsByOrigin
        self.ownsClient = true
        self.http1Connections = (configuration.httpVersion == .http1Only, configuration.maximumConnectionsPerHost)
        if case .enabled(let limit) = configuration.decompression {
            decodesBodies = true
            brotliLimit = DecodingLimit(limit)
        } else {
            decodesBodies = false
            brotliLimit = .none
        }
    }

    /// A transport over an `HTTPClient` you own and shut down yourself.
    ///
    /// Configure the client with `redirectConfiguration: .disallow` so that `APIClient` sees
    /// 3xx responses and applies its own redirect rules (dropping credentials on a host change).
    public init(client: HTTPClient) {
        self.client = client
        self.proxied = [:]
        self.proxySettings = nil
        self.tlsByOrigin = [:]
        self.ownsClient = false
        self.http1Connections = nil
        // Its decompression setting cannot be read back: bodies pass through as they came.
        self.decodesBodies = false
        self.brotliLimit = .none
    }

    deinit {
        if ownsClient, !shutdownState.current {
            // The callback form may be called from any thread that is not an event loop;
            // the client keeps itself alive until the shutdown completes.
            client.shutdown { _ in }
            for other in proxied.values { other.shutdown { _ in } }
        }
    }

    /// Shuts down the client this transport created, closing its connections. Does nothing for
    /// an injected client, or when called a second time.
    public func shutdown() async throws {
        guard ownsClient else { return }
        let first = shutdownState.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        for other in proxied.values { try? await other.shutdown() }
        try await client.shutdown()
    }

    /// The first content coding in `headers`' `Content-Encoding` that AsyncHTTPClient does not
    /// decode (`br`, `zstd`, …): reading such a body as it is would only fail later as a
    /// confusing decoding error. Read in place: nothing is allocated unless a coding is refused.
    static func unsupportedEncoding(in headers: HTTPHeaders) -> String? {
        for (name, value) in headers where name.utf8.equalsIgnoringASCIICase("content-encoding".utf8) {
            var rest = Substring(value)
            while !rest.isEmpty {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                let coding = rest[..<end].trimmingASCIISpaces()
                rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
                if !coding.isEmpty, !decodedEncodings.contains(where: { coding.utf8.equalsIgnoringASCIICase($0.utf8) }) {
                    return coding.lowercased()
                }
            }
        }
        return nil
    }

    /// The content codings AsyncHTTPClient decodes. (`br` alone, with the package trait
    /// `Brotli`, is decoded here: ``isBrotli(_:)``.)
    static let decodedEncodings: [String] = ["gzip", "x-gzip", "deflate", "identity"]

    /// Whether `headers` name `br` as the body's one content coding (besides `identity`): a
    /// body this transport decodes itself. `br` after or before another coding is refused.
    static func isBrotli(_ headers: HTTPHeaders) -> Bool {
        var codings: [Substring] = []
        for (name, value) in headers where name.utf8.equalsIgnoringASCIICase("content-encoding".utf8) {
            for part in value.split(separator: ",") {
                let coding = part.trimmingASCIISpaces()
                if !coding.isEmpty, !coding.utf8.equalsIgnoringASCIICase("identity".utf8) { codings.append(coding) }
            }
        }
        return codings.count == 1 && codings[0].utf8.equalsIgnoringASCIICase("br".utf8)
    }

    /// The client a request to `request`'s origin goes through: a proxy's, or the direct one.
    private func client(for origin: Origin?) -> HTTPClient {
        guard let proxySettings, let origin, let server = proxySettings.server(for: origin) else { return client }
        return proxied[server] ?? client
    }

    /// Whether a request that failed with `error` before any part of its response arrived is
    /// sent once more: when the connection was lost (the server closed a kept-alive
    /// connection just as the request went out on it, the usual race when its keep-alive is
    /// shorter than the pool's), the method is idempotent, the body is in memory, a file or
    /// absent (a stream factory is not called again behind the caller's back), and the calling
    /// task goes on.
    ///
    /// URLSession and browsers resend in this case too; without it, a client calling a server
    /// with a short keep-alive sees an occasional `connectionLost` that a retry policy of
    /// ``RetryPolicy/none`` (the default) passes to the caller.
    static func mayResend(_ request: HTTPRequest, body: RequestBody?, after error: any Error) -> Bool {
        guard !Task.isCancelled, RetryPolicy.idempotentMethods.contains(request.method) else { return false }
        if let body, case .stream = body.source { return false }
        guard case .transport(let failure) = TransportErrorMapping.map(error) else { return false }
        return failure.kind == .connectionLost
    }

    /// Its HTTP/1.1 connections to one host (``Configuration/maximumConnectionsPerHost``) for a
    /// cleartext origin, which never speaks HTTP/2 here, and for every origin when
    /// ``Configuration/httpVersion`` is `.http1Only`; `nil` for an `https` origin whose version
    /// ALPN decides (over HTTP/2 every request goes at once, as a stream).
    public func sendsAtOnce(toOrigin origin: String) -> Int? {
        guard let http1Connections else { return nil }
        return http1Connections.always || origin.hasPrefix("http://") ? http1Connections.perHost : nil
    }

    public func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        if Task.isCancelled { throw NetworkError.cancelled }
        var outgoing = try HTTPClientRequest(request, body: body, loops: client.eventLoopGroup, acceptsCompression: decodesBodies)
        if let failure = SpecialUseDomain.failure(for: request) { throw failure }
        // Proxies and per-origin TLS: nothing is looked up when neither is configured.
        let origin = proxySettings == nil && tlsByOrigin.isEmpty ? nil : Origin(scheme: request.scheme, authority: request.authority)
        if let origin, let tls = tlsByOrigin[origin] { outgoing.tlsConfiguration = tls }
        let client = client(for: origin)
        // Clamped: NIO traps on a TimeAmount beyond Int64 nanoseconds (292 years).
        let deadline: NIODeadline? = timeout.map { .now() + TimeAmount(min($0, .longestInput)) }
        do {
            let response: HTTPClientResponse
            do {
                response = try await client.execute(outgoing, deadline: deadline ?? .distantFuture)
            } catch where Self.mayResend(request, body: body, after: error) {
                // A pooled connection the server closed as the request went out: the request
                // got no answer, so an idempotent one goes once more, on another connection.
                var again = try HTTPClientRequest(request, body: body, loops: client.eventLoopGroup, acceptsCompression: decodesBodies)
                again.tlsConfiguration = outgoing.tlsConfiguration
                response = try await client.execute(again, deadline: deadline ?? .distantFuture)
            }
            let reader = ResponseBodyReader(response.body, deadline: deadline, owner: self)
            #if Brotli
            if decodesBodies, Self.isBrotli(response.headers) {
                return TransportResponse(head: HTTPResponse(response), body: ByteStream(source: try BrotliBodyReader(reader, limit: brotliLimit)))
            }
            #endif
            if decodesBodies, let encoding = Self.unsupportedEncoding(in: response.headers) {
                throw NetworkError.transport(TransportFailure(.invalidResponse, "the response uses content encoding \(encoding), which this transport cannot decode"))
            }
            return TransportResponse(head: HTTPResponse(response), body: ByteStream(source: reader))
        } catch {
            throw TransportErrorMapping.map(error)
        }
    }
}

extension Substring {
    /// This without the spaces and tabs at either end.
    fileprivate func trimmingASCIISpaces() -> Substring {
        var trimmed = self
        while let first = trimmed.utf8.first, first == 0x20 || first == 0x09 { trimmed = trimmed.dropFirst() }
        while let last = trimmed.utf8.last, last == 0x20 || last == 0x09 { trimmed = trimmed.dropLast() }
        return trimmed
    }
}

extension Collection<UInt8> {
    /// Whether these bytes spell `other`, ASCII letters compared without case.
    fileprivate func equalsIgnoringASCIICase(_ other: some Collection<UInt8>) -> Bool {
        guard count == other.count else { return false }
        return zip(self, other).allSatisfy { a, b in a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A) }
    }
}
