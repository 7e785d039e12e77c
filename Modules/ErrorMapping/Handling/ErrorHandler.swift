public import Foundation
public import HTTPCore
public import HTTPTypes

/// Sees the outcome of every exchange an ``ErrorHandlingInterceptor`` wraps and decides
/// what happens next (Combine Networking's error handler).
///
/// ```swift
/// struct RetryOnceOn503: ErrorHandler {
///     func handle(_ outcome: ExchangeOutcome, request: PreparedRequest, retry: Int, context: CallContext) async -> ErrorHandlingDecision {
///         switch outcome {
///         case .response(let head, _) where head.status.code == 503: .retry(after: .milliseconds(100))
///         case .response(let head, _) where head.status.code == 418: .fail(ShopError.teapot)
///         case .failure(let error) where error.isConnectivityFailure: .fail(ShopError.offline)
///         default: .proceed
///         }
///     }
/// }
/// ```
public protocol ErrorHandler: Sendable {
    /// Decides what to do with `outcome`, the result of sending `request`; `retry` counts the
    /// retries this handler already asked for in this attempt (0 the first time).
    func handle(_ outcome: ExchangeOutcome, request: PreparedRequest, retry: Int, context: CallContext) async -> ErrorHandlingDecision
}

/// What one exchange produced, as an ``ErrorHandler`` sees it.
public enum ExchangeOutcome: Sendable {
    /// A response arrived. For a status outside 200–299, `body` holds its first bytes (up to
    /// the interceptor's ``ErrorHandlingInterceptor/bodyExcerptLimit``); for a success it is
    /// `nil` and the body streams on untouched.
    case response(HTTPResponse, body: Data?)
    /// The exchange failed below HTTP (or a later interceptor threw); never `.cancelled`.
    case failure(NetworkError)

    /// The response's status, when there was a response.
    public var status: HTTPResponse.Status? {
        if case .response(let head, _) = self { head.status } else { nil }
    }
}

/// What an ``ErrorHandler`` wants done with an outcome.
public enum ErrorHandlingDecision: Sendable {
    /// Pass the response or the error on unchanged.
    case proceed
    /// Send the request again after `delay`, while the interceptor's retry budget lasts;
    /// past it, the outcome passes on unchanged.
    case retry(after: Duration = .zero)
    /// End the call with `error` instead. An error that is not a `NetworkError` reaches
    /// callers as `NetworkError.underlying(_:)`; ``DomainClient`` throws it as it is when it
    /// is of the domain's error type.
    case fail(any Error)
}

/// An ``ErrorHandler`` made of a closure.
public struct ClosureErrorHandler: ErrorHandler {
    private let body: @Sendable (ExchangeOutcome, PreparedRequest, Int, CallContext) async -> ErrorHandlingDecision

    /// A handler that runs `body` with the outcome, the request, the retry count and the
    /// call's context.
    public init(_ body: @escaping @Sendable (ExchangeOutcome, PreparedRequest, Int, CallContext) async -> ErrorHandlingDecision) {
        self.body = body
    }

    /// Runs the closure.
    public func handle(_ outcome: ExchangeOutcome, request: PreparedRequest, retry: Int, context: CallContext) async -> ErrorHandlingDecision {
        await body(outcome, request, retry, context)
    }
}
