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
}
