public import AsyncHTTPClient
public import HTTPCore
import NIOCore
public import NIOSSL
public import NIOHTTPCompression

extension AsyncHTTPClientTransport {
    /// How the `HTTPClient` that an ``AsyncHTTPClientTransport`` creates is set up.
    ///
    /// ```swift
    /// var configuration = AsyncHTTPClientTransport.Configuration()
    /// configuration.trustRootCertificates(inPEMFile: "/etc/courier/ca.pem")
    /// try configuration.presentClientCertificate(certificatePEMFile: "/etc/courier/client.pem", keyPEMFile: "/etc/courier/client.key")
    /// configuration.proxy = try ProxySettings(environment: ProcessInfo.processInfo.environment)
    /// configuration.connectTimeout = .seconds(5)
    /// let transport = AsyncHTTPClientTransport(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// TLS settings: trust roots, certificate verification, protocol versions, the client
        /// certificate.
        public var tls: TLSConfiguration
        /// TLS settings for the origins that differ from ``tls`` (another CA, another client
        /// certificate), each whole: a request to one of these origins uses its settings and
        /// nothing of ``tls``.
        public var tlsByOrigin: [Origin: TLSConfiguration]
        /// The HTTP proxies requests go through (`nil`: every request goes directly). An
        /// `https://` origin is reached through a `CONNECT` tunnel, with TLS end to end.
        public var proxy: ProxySettings?
        /// Whether gzip and deflate responses (and `br`, built with the package trait `Brotli`)
        /// are decoded, and the limit on how much they may expand. On by default, with a ratio
        /// limit of 25 (a decompression bomb fails the call).
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
            tlsByOrigin: [Origin: TLSConfiguration] = [:],
            proxy: ProxySettings? = nil,
            decompression: HTTPClient.Decompression = .enabled(limit: .ratio(25)),
            connectTimeout: Duration = .seconds(10),
            readTimeout: Duration? = .seconds(60),
            httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
            maximumConnectionsPerHost: Int = 8,
            idleConnectionTimeout: Duration = .seconds(60),
            retriesConnectionEstablishment: Bool = false
        ) {
            self.tls = tls
            self.tlsByOrigin = tlsByOrigin
            self.proxy = proxy
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

        /// Trusts only the CA certificates in the PEM file at `path`, not the system's.
        public mutating func trustOnlyRootCertificates(inPEMFile path: String) {
            tls.trustRoots = .file(path)
            tls.additionalTrustRoots = []
        }

        /// Presents the certificate chain in `certificatePEMFile` (the client's certificate first)
        /// with the private key in `keyPEMFile` to servers that ask for one (`ssl_verify_client`).
        /// Throws when either file cannot be read or parsed; nothing of the key is in the error.
        public mutating func presentClientCertificate(certificatePEMFile: String, keyPEMFile: String) throws {
            try tls.presentClientCertificate(certificatePEMFile: certificatePEMFile, keyPEMFile: keyPEMFile)
        }

        /// The AsyncHTTPClient configuration this describes, with redirects turned off and
        /// without a proxy (see ``clientConfiguration(proxy:)``).
        public var clientConfiguration: HTTPClient.Configuration { clientConfiguration(proxy: nil) }

        /// The AsyncHTTPClient configuration this describes, with redirects turned off, through
        /// `proxy` (`nil`: directly).
        public func clientConfiguration(proxy: ProxyServer?) -> HTTPClient.Configuration {
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
            if let proxy {
                configuration.proxy = .server(
                    host: proxy.host, port: proxy.port,
                    authorization: proxy.credentials.map { .basic(username: $0.username, password: $0.password) }
                )
            }
            return configuration
        }
    }
}

extension TLSConfiguration {
    /// Presents the certificate chain in `certificatePEMFile` with the private key in
    /// `keyPEMFile`. Throws ``ClientCertificateError`` naming the file that cannot be used.
    public mutating func presentClientCertificate(certificatePEMFile: String, keyPEMFile: String) throws {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(certificatePEMFile) } catch {
            throw ClientCertificateError("\(certificatePEMFile) holds no PEM certificate that can be read (\(error))")
        }
        guard !chain.isEmpty else { throw ClientCertificateError("\(certificatePEMFile) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: keyPEMFile, format: .pem) } catch {
            // NIOSSL's error names the file and BoringSSL's reason, never the key's bytes.
            throw ClientCertificateError("\(keyPEMFile) holds no PEM private key that can be read (unencrypted PKCS#8, RSA or EC)")
        }
        certificateChain = chain.map { .certificate($0) }
        privateKey = .privateKey(key)
    }
}

/// A client certificate or key that cannot be used: which file, and why (never the key).
public struct ClientCertificateError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
