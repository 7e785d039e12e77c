public import HTTPCore
import HTTPTypes

/// A `NetworkError` reduced to the case a domain usually cares about: the table from status
/// and transport failure to error case, for factories to switch on.
///
/// Statuses (HTTPCore's `StatusClassification`, for statuses the endpoint does not accept):
///
/// | status                          | `NetworkError`          | `FailureCategory`            |
/// |---------------------------------|-------------------------|------------------------------|
/// | 401                             | `.unauthorized`         | `.unauthorized`              |
/// | 403                             | `.forbidden`            | `.forbidden`                 |
/// | 404                             | `.notFound`             | `.notFound`                  |
/// | other 4xx (400, 408, 409, 429…) | `.client`               | `.client(status:)`           |
/// | 5xx                             | `.server`               | `.server(status:)`           |
/// | 1xx, 2xx or 3xx not accepted    | `.unacceptableStatus`   | `.unacceptableStatus(_:)`    |
///
/// Transport failures (`TransportFailure.Kind`), no response:
///
/// | `TransportFailure.Kind` | `FailureCategory`              | retryable | connectivity |
/// |-------------------------|--------------------------------|-----------|--------------|
/// | `.notConnected`         | `.transport(.notConnected)`    | yes       | yes          |
/// | `.cannotConnect`        | `.transport(.cannotConnect)`   | yes       | yes          |
/// | `.dns`                  | `.transport(.dns)`             | yes       | yes          |
/// | `.timedOut`             | `.transport(.timedOut)`        | yes       | no           |
/// | `.connectionLost`       | `.transport(.connectionLost)`  | yes       | no           |
/// | `.tls`                  | `.transport(.tls)`             | no        | no           |
/// | `.invalidResponse`      | `.transport(.invalidResponse)` | no        | no           |
/// | `.other`                | `.transport(.other)`           | yes       | no           |
///
/// Everything else keeps its own case: `.invalidRequest`, `.encoding`, `.decoding`,
/// `.bodyTooLarge`, `.tooManyRedirects`, `.insecureRedirect`, `.cancelled`, `.offline` (retryable, connectivity),
/// and `.underlying` for errors thrown by plugins, interceptors and mappers. "Retryable" and
/// "connectivity" are `NetworkError.isRetryable` and `isConnectivityFailure`; 408 and 429
/// are also retryable.
///
/// ```swift
/// switch FailureCategory(error) {
/// case .unauthorized: .signInRequired
/// case .transport(.notConnected), .transport(.cannotConnect), .transport(.dns), .offline: .offline
/// case .server(let status) where status == 503: .maintenance
/// default: .unexpected
/// }
/// ```
public enum FailureCategory: Sendable, Hashable {
    /// The request could not be built.
    case invalidRequest
    /// A body or query value could not be encoded.
    case encoding
    /// 401.
    case unauthorized
    /// 403.
    case forbidden
    /// 404.
    case notFound
    /// Any other 4xx, with its code.
    case client(status: Int)
    /// Any 5xx, with its code.
    case server(status: Int)
    /// A status the endpoint does not accept that is neither 4xx nor 5xx.
    case unacceptableStatus(Int)
    /// The body did not decode.
    case decoding
    /// A failure below HTTP, of HTTPCore's kind.
    case transport(TransportFailure.Kind)
    /// A body was larger than the in-memory limit.
    case bodyTooLarge
    /// Too many redirects.
    case tooManyRedirects
    /// A redirect from https to http, refused.
    case insecureRedirect
    /// The calling task was cancelled.
    case cancelled
    /// A reachability check said the network is gone.
    case offline
    /// A plugin, interceptor or mapper threw an error of its own.
    case underlying

    /// The category of `error`, per the table above.
    public init(_ error: NetworkError) {
        switch error {
        case .invalidRequest: self = .invalidRequest
        case .encoding: self = .encoding
        case .unauthorized: self = .unauthorized
        case .forbidden: self = .forbidden
        case .notFound: self = .notFound
        case .client(let response): self = .client(status: response.status.code)
        case .server(let response): self = .server(status: response.status.code)
        case .unacceptableStatus(let response): self = .unacceptableStatus(response.status.code)
        case .decoding: self = .decoding
        case .transport(let failure): self = .transport(failure.kind)
        case .bodyTooLarge: self = .bodyTooLarge
        case .tooManyRedirects: self = .tooManyRedirects
        case .insecureRedirect: self = .insecureRedirect
        case .cancelled: self = .cancelled
        case .offline: self = .offline
        case .underlying: self = .underlying
        }
    }

}
