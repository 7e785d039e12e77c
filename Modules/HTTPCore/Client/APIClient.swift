public import Foundation
import HTTPTypes

/// Sends endpoints and requests through a transport, with plugins, interceptors, retries,
/// redirects, validation and decoding.
///
/// A client holds no mutable state: share one per backend across tasks.
///
/// ```swift
/// let client = APIClient(
///     configuration: ClientConfiguration(baseURL: URL(string: "https://api.example.com")!),
///     transport: AsyncHTTPClientTransport()
/// )
/// let user: User = try await client.model(UserAPI.user(id: 42))
/// ```
///
/// The order of work for one call:
/// 1. The endpoint becomes a request: base URL, path, query, default then endpoint headers, body.
/// 2. Each plugin in scope runs ``Plugin/prepare(_:context:)``, in order.
/// 3. Attempts, under the ``RetryPolicy``: the interceptors in scope, outermost first, then the
///    exchange, in which each plugin's ``Plugin/willSend(_:context:)`` runs before every hop
///    and redirects are followed.
/// 4. The status is validated against the endpoint's ``StatusValidation``; the body is read
///    and decoded for the kind of call.
/// 5. Each plugin's ``Plugin/didReceive(_:for:context:)`` sees the result or the error.
public final class APIClient: Sendable {
    /// The client's configuration.
    public let configuration: ClientConfiguration
    /// The transport requests go through.
    public let transport: any Transport

    /// The base URL's scheme, authority and path, parsed once, for requests whose head is
    /// built without a URL (see ``makeRequest(_:bodyOverride:)``).
    let baseHead: BaseHead?

    /// A client that sends requests through `transport` with the settings of `configuration`.
    public init(configuration: ClientConfiguration, transport: any Transport) {
        self.configuration = configuration
        self.transport = transport
        self.baseHead = BaseHead(configuration.baseURL)
    }

    /// A client with the default configuration for `baseURL`.
    public convenience init(baseURL: URL, transport: any Transport) {
        self.init(configuration: ClientConfiguration(baseURL: baseURL), transport: transport)
    }

    /// Runs one call and hands the validated response to `read`, which turns the streamed body
    /// into the call's result and says what plugins may see of it. `read` gets the request
    /// that produced the response (the last redirect hop), for errors that carry the response.
    ///
    /// `collectingUpTo` is the in-memory limit when `read` reads the whole body into memory: the
    /// transport may then return the response with its body already in.
    func perform<Result>(
        _ endpoint: some Endpoint,
        bodyOverride: RequestBody? = nil,
        collectingUpTo: Int? = nil,
        read: (TransportResponse, HTTPRequest) async throws -> (value: Result, bodyForPlugins: Data, bytes: Int)
    ) async throws(NetworkError) -> Response<Result> {
        try await perform(
            name: endpoint.name, scopes: endpoint.scopes, validation: endpoint.validation, collectingUpTo: collectingUpTo,
            build: { () throws(NetworkError) in try makeRequest(endpoint, bodyOverride: bodyOverride) }, read: read
        )
    }

    /// Sends a request built elsewhere (the offline queue's replay of a stored request) as a
    /// call named `name` in `scopes`: the plugins of those scopes prepare it again and see the
    /// result; interceptors, retries, redirects and `validation` apply as for an endpoint. The
    /// body is dropped.
    @discardableResult
    package func send(
        _ request: PreparedRequest, name: String, scopes: Set<PluginScope>, validation: StatusValidation = .successful
    ) async throws(NetworkError) -> Response<Void> {
        try await perform(name: name, scopes: scopes, validation: validation, build: { () throws(NetworkError) in request }, read: Self.dropBody)
    }

    /// ``send(_:name:scopes:validation:)`` keeping the body's first `limit` bytes: the offline
    /// queue's replay of an entry that keeps its response. The rest of a longer body is read
    /// and dropped (so the connection can be reused), and `truncated` says so.
    package func send(
        _ request: PreparedRequest, name: String, scopes: Set<PluginScope>, keepingUpTo limit: Int, validation: StatusValidation = .successful
    ) async throws(NetworkError) -> Response<(body: Data, truncated: Bool)> {
        try await perform(name: name, scopes: scopes, validation: validation, build: { () throws(NetworkError) in request }) { raw, _ in
            var body = try await raw.body.collectPrefix(limit + 1)
            let truncated = body.count > limit
            if truncated { body = body.prefix(limit) }
            return ((body, truncated), body, body.count)
        }
    }

    /// Sends a request built elsewhere (an OpenAPI-generated client's, through the
    /// `OpenAPITransport` module) as a call named `name` in `scopes`, as
    /// ``send(_:name:scopes:validation:)`` does, and returns the response with its body still
    /// streaming, for the caller to consume once. Plugins see the response with an empty body;
    /// the metrics count no body bytes.
    package func stream(
        _ request: PreparedRequest, name: String, scopes: Set<PluginScope>, validation: StatusValidation = .any
    ) async throws(NetworkError) -> Response<ByteStream> {
        try await perform(name: name, scopes: scopes, validation: validation, build: { () throws(NetworkError) in request }) { raw, _ in
            (raw.body, Data(), 0)
        }
    }

    /// One call from a request `build` makes: see the order of work above.
    private func perform<Result>(
        name: String,
        scopes: Set<PluginScope>,
        validation: StatusValidation,
        collectingUpTo: Int? = nil,
        build: () throws(NetworkError) -> PreparedRequest,
        read: (TransportResponse, HTTPRequest) async throws -> (value: Result, bodyForPlugins: Data, bytes: Int)
    ) async throws(NetworkError) -> Response<Result> {
        let started = ContinuousClock.now
        var context = CallContext(endpointName: name, scopes: scopes, startedAt: started)
        context.collectingUpTo = collectingUpTo
        let plugins = configuration.plugins.filter { $0.scope.applies(to: scopes) }
        var attempts = 0
        var prepared: PreparedRequest?
        do {
            var request = try build()
            for plugin in plugins { request = try await plugin.prepare(request, context: context) }
            prepared = request
            let raw = try await sendWithRetries(request, context: context, plugins: plugins, attempts: &attempts)
            let finalRequest = raw.request ?? request.head
            guard validation.accepts(raw.head.status.code) else {
                let excerpt = try await raw.body.collectPrefix(configuration.maxErrorBodySize)
                let metrics = ResponseMetrics(duration: .now - started, attempts: attempts, redirects: raw.redirects, bytesReceived: excerpt.count)
                throw StatusClassification.error(for: Response(status: raw.head.status, headers: raw.head.headerFields, body: excerpt, request: finalRequest, metrics: metrics))
            }
            let result = try await read(raw, finalRequest)
            let metrics = ResponseMetrics(duration: .now - started, attempts: attempts, redirects: raw.redirects, bytesReceived: result.bytes)
            let response = Response(status: raw.head.status, headers: raw.head.headerFields, body: result.value, request: finalRequest, metrics: metrics)
            if !plugins.isEmpty {
                let seen = response.map { _ in result.bodyForPlugins }
                for plugin in plugins { await plugin.didReceive(.success(seen), for: request, context: context) }
            }
            return response
        } catch {
            let failure = NetworkError(error)
            if let prepared {
                for plugin in plugins { await plugin.didReceive(.failure(failure), for: prepared, context: context) }
            }
            throw failure
        }
    }

    private func sendWithRetries(
        _ request: PreparedRequest,
        context: CallContext,
        plugins: [any Plugin],
        attempts: inout Int
    ) async throws -> TransportResponse {
        let policy = configuration.retryPolicy
        let chain = Chain(client: self, interceptors: configuration.interceptors.filter { $0.scope.applies(to: context.scopes) }, plugins: plugins)
        while true {
            attempts += 1
            var attemptContext = context
            attemptContext.attempt = attempts
            let delay: Duration
            do {
                let response = try await chain.run(request, context: attemptContext)
                guard let wait = policy.delay(afterAttempt: attempts, method: request.head.method, response: response.head) else {
                    return response
                }
                await response.body.discard()
                delay = wait
            } catch {
                let failure = NetworkError(error)
                guard let wait = policy.delay(afterAttempt: attempts, method: request.head.method, error: failure) else {
                    throw failure
                }
                delay = wait
            }
            try await policy.clock.sleep(delay)
        }
    }
}

/// The interceptors in scope around the exchange, built once per call. An attempt runs it with
/// its own context; a call without interceptors goes straight to the exchange, and one with
/// them makes only the `next` closures their API asks for.
private struct Chain: Sendable {
    let client: APIClient
    let interceptors: [any Interceptor]
    let plugins: [any Plugin]

    func run(_ request: PreparedRequest, context: CallContext, from index: Int = 0) async throws -> TransportResponse {
        guard index < interceptors.count else {
            return try await client.exchange(request, context: context, plugins: plugins)
        }
        return try await interceptors[index].intercept(request, context: context) { next in
            try await run(next, context: context, from: index + 1)
        }
    }
}
