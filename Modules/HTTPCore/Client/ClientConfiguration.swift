public import Foundation
public import HTTPTypes

/// Everything an ``APIClient`` needs besides its transport.
///
/// ```swift
/// var configuration = try ClientConfiguration(scheme: "https", host: "api.example.com", path: "/v2")
/// configuration.defaultHeaders[.accept] = "application/json"
/// configuration.timeout = .seconds(15)
/// configuration.plugins = [LoggingPlugin()]       // from the Plugins module
/// ```
public struct ClientConfiguration: Sendable {
    /// The URL endpoint paths are appended to.
    public var baseURL: URL
    /// Header fields every request carries, unless an endpoint sets the same field.
    public var defaultHeaders: HTTPFields
    /// The limit for one exchange, when an endpoint does not set its own.
    public var timeout: Duration
    /// Encodes `Encodable` bodies.
    public var encoder: JSONEncoder
    /// Decodes models.
    public var decoder: JSONDecoder
    /// The largest body read into memory; past it a call fails with
    /// ``NetworkError/bodyTooLarge(limit:)``. Downloads to a file are not limited.
    public var maxBodySize: Int
    /// How much of an error response's body is kept in the error.
    public var maxErrorBodySize: Int
    /// When to send a request again.
    public var retryPolicy: RetryPolicy
    /// The most redirects followed in one attempt; 0 returns 3xx responses as they are.
    public var maxRedirects: Int
    /// Whether a redirect from `https` to `http` is followed (without any credential field).
    /// `false` by default: such a redirect fails with ``NetworkError/insecureRedirect(from:to:)``.
    public var followsInsecureRedirects = false
    /// Header fields dropped when a redirect leaves the request's origin (scheme, host and
    /// effective port); `HTTPTypes.HTTPField.Name.credentialFields` by default.
    public var credentialFields: Set<HTTPField.Name> = HTTPField.Name.credentialFields
    /// Plugins, in the order they run.
    public var plugins: [any Plugin]
    /// Interceptors, outermost first.
    public var interceptors: [any Interceptor]

    /// A configuration for `baseURL`. Unless given: a 60-second timeout, a 16 MiB body limit,
    /// 64 KiB of an error body kept, no retries, at most 10 redirects, and no plugins or
    /// interceptors.
    public init(
        baseURL: URL,
        defaultHeaders: HTTPFields = [:],
        timeout: Duration = .seconds(60),
        encoder: JSONEncoder = JSONEncoder(),
        decoder: JSONDecoder = JSONDecoder(),
        maxBodySize: Int = 16 * 1024 * 1024,
        maxErrorBodySize: Int = 64 * 1024,
        retryPolicy: RetryPolicy = .none,
        maxRedirects: Int = 10,
        plugins: [any Plugin] = [],
        interceptors: [any Interceptor] = []
    ) {
        self.baseURL = baseURL
        self.defaultHeaders = defaultHeaders
        self.timeout = timeout
        self.encoder = encoder
        self.decoder = decoder
        self.maxBodySize = maxBodySize
        self.maxErrorBodySize = maxErrorBodySize
        self.retryPolicy = retryPolicy
        self.maxRedirects = maxRedirects
        self.plugins = plugins
        self.interceptors = interceptors
    }

    /// A configuration whose base URL is built from parts, as Leash's manager builder does.
    ///
    /// - Throws: ``NetworkError/invalidRequest(_:)`` when the parts do not form a URL.
    public init(scheme: String = "https", host: String, port: Int? = nil, path: String = "") throws(NetworkError) {
        var components = URLComponents()
        components.scheme = scheme
        components.host = host
        components.port = port
        components.path = path.isEmpty || path.hasPrefix("/") ? path : "/" + path
        guard !host.isEmpty, let url = components.url else {
            throw .invalidRequest(.malformedURL("\(scheme)://\(host):\(port.map(String.init) ?? "")\(path)"))
        }
        self.init(baseURL: url)
    }
}
