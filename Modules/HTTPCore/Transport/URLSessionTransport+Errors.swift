import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionTransport {
    /// The ``NetworkError`` for an error a `URLSessionTask` completed with.
    ///
    /// | URLError code                                              | kind              |
    /// |------------------------------------------------------------|-------------------|
    /// | notConnectedToInternet, dataNotAllowed, internationalRoamingOff | notConnected |
    /// | timedOut                                                   | timedOut          |
    /// | cannotConnectToHost                                        | cannotConnect     |
    /// | networkConnectionLost                                      | connectionLost    |
    /// | cannotFindHost, dnsLookupFailed                            | dns               |
    /// | secureConnectionFailed, serverCertificate*, clientCertificate* | tls          |
    /// | badServerResponse, cannotParseResponse, cannotDecode*ContentData, zeroByteResource | invalidResponse |
    /// | cancelled                                                  | ``NetworkError/cancelled`` |
    ///
    /// FoundationNetworking reports many libcurl failures (TLS handshakes, bodies cut short) as
    /// `URLError.unknown` with curl's message; those are classified by the message.
    static func networkError(for error: any Error) -> NetworkError {
        guard let urlError = error as? URLError else { return NetworkError(error) }
        let message = urlError.localizedDescription
        switch urlError.code {
        case .cancelled:
            return .cancelled
        case .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff:
            return .transport(TransportFailure(.notConnected, message))
        case .timedOut:
            return .transport(TransportFailure(.timedOut, message))
        case .cannotConnectToHost:
            return .transport(TransportFailure(.cannotConnect, message))
        case .networkConnectionLost:
            return .transport(TransportFailure(.connectionLost, message))
        case .cannotFindHost, .dnsLookupFailed:
            return .transport(TransportFailure(.dns, message))
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
             .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid,
             .clientCertificateRejected, .clientCertificateRequired:
            return .transport(TransportFailure(.tls, message))
        case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData,
             .zeroByteResource:
            return .transport(TransportFailure(.invalidResponse, message))
        default:
            return .transport(TransportFailure(kind(forCurlMessage: message), "\(message) (URLError \(urlError.code.rawValue))"))
        }
    }

    /// The kind of failure a libcurl error message describes, for failures FoundationNetworking
    /// leaves as `URLError.unknown`.
    static func kind(forCurlMessage message: String) -> TransportFailure.Kind {
        let text = message.lowercased()
        let table: [(TransportFailure.Kind, [String])] = [
            (.tls, ["ssl", "tls", "certificate", "handshake"]),
            (.dns, ["resolve host", "resolve proxy"]),
            (.timedOut, ["timed out", "timeout"]),
            (.cannotConnect, ["couldn't connect", "could not connect", "failed to connect"]),
            (.connectionLost, ["transfer closed", "connection reset", "recv failure", "send failure",
                               "partial file", "connection died", "broken pipe"]),
            (.invalidResponse, ["http/0.9", "weird server reply", "unsupported http version", "invalid header",
                                "nul byte", "chunk", "content encoding", "empty reply", "header"]),
        ]
        return table.first { _, needles in needles.contains { text.contains($0) } }?.0 ?? .other
    }
}
