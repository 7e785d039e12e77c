public import HTTPCore
import Foundation
import HTTPTypes

/// An interceptor that shows every raw response and transport error to an ``ErrorHandler``,
/// which may let it pass, replace it with another error, or ask for a retry (at most
/// ``maxRetries`` times per attempt of the client's own `RetryPolicy`).
///
/// It sees responses before the client validates their status, so it can turn a 418 into a
/// domain error or retry a 409 that the client's policy would not retry.
///
/// ```swift
/// let handler = ErrorHandlingInterceptor(maxRetries: 1) { outcome, _, _, _ in
///     switch outcome.status?.code {
///     case 409: .retry()
///     case 418: .fail(ShopError.teapot)
///     default: .proceed
///     }
/// }
/// var configuration = ClientConfiguration(baseURL: url)
/// configuration.interceptors = [handler]
/// ```
public struct ErrorHandlingInterceptor: Interceptor {
    /// The handler that decides.
    public let handler: any ErrorHandler
    /// The most retries the handler may ask for in one pass.
    public let maxRetries: Int
    /// How much of a non-2xx body the handler sees; the whole body still streams on.
    public let bodyExcerptLimit: Int
    /// Sleeps between retries; inject a test clock to run without sleeping.
    public let clock: RetryClock
    /// Which endpoints this applies to.
    public let scope: PluginScope

    /// An interceptor that asks `handler`.
    public init(maxRetries: Int = 1, bodyExcerptLimit: Int = 64 * 1024, clock: RetryClock = .continuous, scope: PluginScope = .universal, handler: some ErrorHandler) {
        self.handler = handler
        self.maxRetries = max(0, maxRetries)
        self.bodyExcerptLimit = max(0, bodyExcerptLimit)
        self.clock = clock
        self.scope = scope
    }

    /// An interceptor that asks `handle`.
    public init(
        maxRetries: Int = 1,
        bodyExcerptLimit: Int = 64 * 1024,
        clock: RetryClock = .continuous,
        scope: PluginScope = .universal,
        handle: @escaping @Sendable (ExchangeOutcome, PreparedRequest, Int, CallContext) async -> ErrorHandlingDecision
    ) {
        self.init(maxRetries: maxRetries, bodyExcerptLimit: bodyExcerptLimit, clock: clock, scope: scope, handler: ClosureErrorHandler(handle))
    }

    /// Sends `request` through `next`, shows the outcome to ``handler`` and follows its
    /// decision; a cancelled call is never shown, it ends at once.
    public func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        var retry = 0
        while true {
            let outcome: ExchangeOutcome
            var response: TransportResponse?
            do {
                let raw = try await next(request)
                if (200..<300).contains(raw.head.status.code) {
                    response = raw
                    outcome = .response(raw.head, body: nil)
                } else {
                    // The handler sees an excerpt; the caller still gets the whole body.
                    let buffered = try await raw.body.buffered(upTo: bodyExcerptLimit)
                    response = TransportResponse(head: raw.head, body: buffered.stream)
                    outcome = .response(raw.head, body: Data(buffered.bytes.prefix(bodyExcerptLimit)))
                }
            } catch {
                let failure = NetworkError(error)
                if case .cancelled = failure { throw failure }
                outcome = .failure(failure)
            }
            switch await handler.handle(outcome, request: request, retry: retry, context: context) {
            case .retry(let delay) where retry < maxRetries:
                retry += 1
                if let response { await response.body.discard(upTo: bodyExcerptLimit) }
                try await clock.sleep(delay)
                if Task.isCancelled { throw NetworkError.cancelled }
            case .fail(let error):
                throw error
            case .proceed, .retry:
                if let response { return response }
                if case .failure(let error) = outcome { throw error }
            }
        }
    }
}
