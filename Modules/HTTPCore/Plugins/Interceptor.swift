/// Middleware around the exchange: sees the request, calls `next` (or not), and returns a
/// response of its choosing.
///
/// Interceptors run outermost first, in the order configured, after every plugin's
/// ``Plugin/prepare(_:context:)``. The response they see is the raw one, before status
/// validation, so an interceptor can react to a 401 or a 503. With one shape they express
/// every moment Leash names: before (execution), a thrown error (failure), a response
/// (success), and `defer` (completion).
///
/// Pass through, and short-circuit:
/// ```swift
/// struct Timing: Interceptor {
///     func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
///         let start = ContinuousClock.now
///         defer { print(request.head.method, ContinuousClock.now - start) }
///         return try await next(request)
///     }
/// }
///
/// struct Maintenance: Interceptor {
///     func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
///         TransportResponse(head: HTTPResponse(status: .serviceUnavailable), body: ByteStream(data: Data()))
///     }
/// }
/// ```
public protocol Interceptor: Sendable {
    /// Which endpoints this interceptor applies to; ``PluginScope/universal`` by default.
    var scope: PluginScope { get }

    /// Handles `request`, usually by calling `next` once; calling it again retries.
    func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse
}

extension Interceptor {
    public var scope: PluginScope { .universal }
}

/// The rest of the chain: later interceptors, then the exchange itself.
public typealias InterceptorNext = @Sendable (PreparedRequest) async throws -> TransportResponse
