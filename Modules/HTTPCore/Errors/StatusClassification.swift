public import Foundation
import HTTPTypes

/// The table from an unaccepted status to a ``NetworkError`` case.
///
/// | status            | case                                   |
/// |-------------------|----------------------------------------|
/// | 401               | ``NetworkError/unauthorized(_:)``      |
/// | 403               | ``NetworkError/forbidden(_:)``         |
/// | 404               | ``NetworkError/notFound(_:)``          |
/// | other 4xx         | ``NetworkError/client(_:)``            |
/// | 5xx               | ``NetworkError/server(_:)``            |
/// | anything else     | ``NetworkError/unacceptableStatus(_:)``|
public enum StatusClassification {
    /// The error for a response whose status the endpoint does not accept.
    public static func error(for response: Response<Data>) -> NetworkError {
        switch response.status.code {
        case 401: .unauthorized(response)
        case 403: .forbidden(response)
        case 404: .notFound(response)
        case 400..<500: .client(response)
        case 500..<600: .server(response)
        default: .unacceptableStatus(response)
        }
    }

    /// Whether a status is worth another try later: 408 Request Timeout, 425 Too Early, 429 Too
    /// Many Requests, and every 5xx but 501 Not Implemented and 505 HTTP Version Not
    /// Supported, which a server answers the same way every time.
    ///
    /// The one table of retryable statuses: ``NetworkError/isRetryable``, the default
    /// ``RetryPolicy/retryableStatuses`` and the offline queue's lifecycle all read it.
    public static func isRetryable(_ code: Int) -> Bool {
        switch code {
        case 408, 425, 429: true
        case 501, 505: false
        case 500..<600: true
        default: false
        }
    }

    /// ``isRetryable(_:)`` as a set of codes, for ``RetryPolicy/retryableStatuses``.
    public static let retryableStatuses: Set<Int> = Set((100..<600).filter(isRetryable))
}
