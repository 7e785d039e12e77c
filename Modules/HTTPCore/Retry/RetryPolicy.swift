public import Foundation
public import HTTPTypes

/// When and how ``APIClient`` sends a request again.
///
/// A response is retried when its method is retryable (idempotent methods by default), its
/// status is retryable (by default, ``StatusClassification/isRetryable(_:)``: 408, 425, 429
/// and 5xx but 501 and 505) and attempts remain; a
/// transport failure is retried under the same conditions when ``NetworkError/isRetryable``.
/// The wait is the larger of the backoff delay and the server's `Retry-After`, capped by
/// ``maxRetryAfter``.
///
/// ```swift
/// var configuration = ClientConfiguration(baseURL: url)
/// configuration.retryPolicy = .exponential(maxAttempts: 4, backoff: Backoff(base: .milliseconds(100)))
/// ```
public struct RetryPolicy: Sendable {
    /// The most times a request is sent, the first time included. 1 means no retry.
    public var maxAttempts: Int
    /// The delay between attempts.
    public var backoff: Backoff
    /// Methods that may be sent again.
    public var retryableMethods: Set<HTTPRequest.Method>
    /// Statuses that are retried.
    public var retryableStatuses: Set<Int>
    /// The longest `Retry-After` honoured; a longer one ends the retries with the response.
    public var maxRetryAfter: Duration
    /// Sleeps and tells the time; inject a test clock to run without sleeping.
    public var clock: RetryClock
    /// A source of values in `0..<1` for jitter.
    public var random: @Sendable () -> Double

    /// A policy of `maxAttempts` sends in all (at least 1), with `backoff` between them. Unless
    /// given, it retries idempotent methods on the retryable statuses, honours a `Retry-After` of
    /// up to 120 seconds, and sleeps in real time.
    public init(
        maxAttempts: Int,
        backoff: Backoff = Backoff(),
        retryableMethods: Set<HTTPRequest.Method> = RetryPolicy.idempotentMethods,
        retryableStatuses: Set<Int> = StatusClassification.retryableStatuses,
        maxRetryAfter: Duration = .seconds(120),
        clock: RetryClock = .continuous,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.backoff = backoff
        self.retryableMethods = retryableMethods
        self.retryableStatuses = retryableStatuses
        self.maxRetryAfter = maxRetryAfter
        self.clock = clock
        self.random = random
    }

    /// GET, HEAD, OPTIONS, PUT, DELETE and TRACE (RFC 9110 §9.2.2).
    public static let idempotentMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .put, .delete, .trace]

    /// Never retry.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// Retry up to `maxAttempts` attempts in all, with exponential backoff and full jitter.
    public static func exponential(maxAttempts: Int = 3, backoff: Backoff = Backoff()) -> RetryPolicy {
        RetryPolicy(maxAttempts: maxAttempts, backoff: backoff)
    }

    /// The wait before the next attempt after attempt number `attempt` got `response`,
    /// or `nil` when it must not be retried.
    public func delay(afterAttempt attempt: Int, method: HTTPRequest.Method, response: HTTPResponse) -> Duration? {
        guard attempt < maxAttempts, retryableMethods.contains(method),
              retryableStatuses.contains(response.status.code) else { return nil }
        let backoffDelay = backoff.delay(forRetry: attempt, unitRandom: random())
        guard let header = response.headerFields[.retryAfter],
              let requested = RetryAfter.delay(from: header, now: clock.now()) else { return backoffDelay }
        guard requested <= maxRetryAfter else { return nil }
        return max(requested, backoffDelay)
    }

    /// The wait before the next attempt after attempt number `attempt` failed with `error`,
    /// or `nil` when it must not be retried.
    public func delay(afterAttempt attempt: Int, method: HTTPRequest.Method, error: NetworkError) -> Duration? {
        guard attempt < maxAttempts, retryableMethods.contains(method), case .transport = error,
              error.isRetryable else { return nil }
        return backoff.delay(forRetry: attempt, unitRandom: random())
    }
}

/// Sleeping and the wall-clock time, injectable for tests.
public struct RetryClock: Sendable {
    /// Suspends for a duration; throws when the task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// The current wall-clock date, for `Retry-After` dates.
    public var now: @Sendable () -> Date

    /// A clock that waits with `sleep` and reads the wall-clock date with `now`.
    public init(sleep: @escaping @Sendable (Duration) async throws -> Void, now: @escaping @Sendable () -> Date) {
        self.sleep = sleep
        self.now = now
    }

    /// Real time.
    public static let continuous = RetryClock(
        sleep: { try await Task.sleep(for: $0) },
        now: { Date() }
    )

    /// A clock over any `Clock` whose duration is `Duration`, such as a test clock.
    public static func clock<C: Clock>(_ clock: C, now: @escaping @Sendable () -> Date = { Date() }) -> RetryClock where C.Duration == Duration {
        RetryClock(sleep: { try await clock.sleep(for: $0) }, now: now)
    }
}
