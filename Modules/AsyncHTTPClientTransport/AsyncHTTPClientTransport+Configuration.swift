public import AsyncHTTPClient
import NIOCore
public import NIOSSL
public import NIOHTTPCompression

extension AsyncHTTPClientTransport {
    /// How the `HTTPClient` that an ``AsyncHTTPClientTransport`` creates is set up.
    ///
    /// ```swift
    /// var configuration = AsyncHTTPClientTransport.Configuration()
    /// configuration.trustRootCertificates(inPEMFile: "/etc/courier/ca.pem")
    /// configuration.connectTimeout = .seconds(5)
    /// let transport = AsyncHTTPClientTransport(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// TLS settings: trust roots, certificate verification, protocol versions.
        public var tls: TLSConfiguration
        /// Whether gzip and deflate responses are decoded, and the limit on how much they may
        /// expand. On by default, with a ratio limit of 25 (a decompression bomb fails the call).
        public var decompression: HTTPClient.Decompression
        /// The longest a connection may take to open (TCP and TLS).
        public var connectTimeout: Duration
        /// The longest the server may stay silent while a response is read. This also ends a
        /// body that stalls after its head arrived; the per-request timeout covers the head and
        /// is checked again at every chunk of the body.
        public var readTimeout: Duration?
        /// HTTP/1.1 only, or HTTP/2 when the server offers it through TLS ALPN (the default).
        public var httpVersion: HTTPClient.Configuration.HTTPVersion
        /// The most HTTP/1.1 connections kept to one host (a soft limit).
        public var maximumConnectionsPerHost: Int
        /// How long an idle pooled connection is kept open.
        public var idleConnectionTimeout: Duration
        /// Whether a failed connection attempt is retried inside AsyncHTTPClient until the
        /// connect timeout. Off by default: `APIClient`'s `RetryPolicy` decides about retries,
        /// and a refused connection fails at once.
        public var retriesConnectionEstablishment: Bool

        /// The defaults: system trust roots and TLS 1.2 or later, decompression on, 10 s connect
        /// timeout, 60 s read timeout, HTTP/2 when offered, 8 connections per host.
        public init(
            tls: TLSConfiguration = Configuration.defaultTLS,
            decompression: HTTPClient.Decompression = .enabled(limit: .ratio(25)),
            connectTimeout: Duration = .seconds(10),
            readTimeout: Duration? = .seconds(60),
            httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
            maximumConnectionsPerHost: Int = 8,
            idleConnectionTimeout: Duration = .seconds(60),
            retriesConnectionEstablishment: Bool = false
        ) {
            self.tls = tls
            self.decompression = decompression
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.httpVersion = httpVersion
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.idleConnectionTimeout = idleConnectionTimeout
            self.retriesConnectionEstablishment = retriesConnectionEstablishment
        }

        /// The system's trust roots, and TLS 1.2 as the oldest version offered (NIOSSL's own
        /// default still allows TLS 1.0, which RFC 8996 deprecates).
        public static var defaultTLS: TLSConfiguration {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.minimumTLSVersion = .tlsv12
            return tls
        }

        /// Also trusts the CA certificates in the PEM file at `path`, besides the system's.
        public mutating func trustRootCertificates(inPEMFile path: String) {
            tls.additionalTrustRoots.append(.file(path))
        }

        /// The AsyncHTTPClient configuration this describes, with redirects turned off.
        public var clientConfiguration: HTTPClient.Configuration {
            var pool = HTTPClient.Configuration.ConnectionPool(
                idleTimeout: TimeAmount(idleConnectionTimeout),
                concurrentHTTP1ConnectionsPerHostSoftLimit: maximumConnectionsPerHost
            )
            pool.retryConnectionEstablishment = retriesConnectionEstablishment
            var configuration = HTTPClient.Configuration(
                tlsConfiguration: tls,
                redirectConfiguration: .disallow,
                timeout: HTTPClient.Configuration.Timeout(
                    connect: TimeAmount(connectTimeout),
                    read: readTimeout.map { TimeAmount($0) }
                ),
                connectionPool: pool,
                decompression: decompression
            )
            configuration.httpVersion = httpVersion
            return configuration
        }
    }
}
