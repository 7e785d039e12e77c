import AsyncHTTPClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPCore
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL

/// Turns the errors of AsyncHTTPClient, SwiftNIO and NIOSSL into ``NetworkError``.
///
/// The table (also in `Docs/Transports.md`):
///
/// | error | result |
/// | --- | --- |
/// | the calling task was cancelled, `CancellationError`, `HTTPClientError.cancelled` | `.cancelled` |
/// | `HTTPClientError` deadline, connect, read, write, TLS or proxy handshake timeouts, `ChannelError.connectTimeout` | `.timedOut` |
/// | `NIOConnectionError` with only DNS errors, `SocketAddressError`, `SocketAddressError.UnknownHost` | `.dns` |
/// | `NIOConnectionError` with connection errors, `ECONNREFUSED`, `EHOSTUNREACH` | `.cannotConnect` |
/// | `ENETUNREACH`, `ENETDOWN` | `.notConnected` |
/// | `HTTPClientError.remoteConnectionClosed`, `HTTPParserError.invalidEOFState`, `ChannelError` EOF or closed, `ECONNRESET`, `EPIPE` | `.connectionLost` |
/// | `NIOSSLError`, `BoringSSLError`, `NIOSSLExtraError` | `.tls` |
/// | `HTTPClientError.proxyAuthenticationRequired`, `.invalidProxyResponse` (a proxy's answer to `CONNECT` other than 2xx) | `.cannotConnect` |
/// | `HTTPParserError`, decompression errors, invalid or mismatched responses | `.invalidResponse` |
/// | anything else | `.other` |
enum TransportErrorMapping {
    static func map(_ error: any Error) -> NetworkError {
        if Task.isCancelled { return .cancelled }
        switch error {
        case let error as NetworkError:
            return error
        case is CancellationError:
            return .cancelled
        case let error as HTTPClientError:
            return map(error)
        case let error as NIOConnectionError:
            return map(error)
        case let error as IOError:
            return failure(kind(errno: error.errnoCode), error)
        case let error as ChannelError:
            return map(error)
        case is SocketAddressError, is SocketAddressError.UnknownHost:
            return failure(.dns, error)
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            return failure(.tls, error)
        case HTTPParserError.invalidEOFState:
            // The peer closed the connection before the message was complete.
            return failure(.connectionLost, error)
        case is HTTPParserError, is NIOHTTPDecompression.DecompressionError:
            return failure(.invalidResponse, error)
        default:
            return failure(.other, error)
        }
    }

    private static func map(_ error: HTTPClientError) -> NetworkError {
        switch error {
        case .cancelled, .requestStreamCancelled:
            return .cancelled
        case .deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout, .tlsHandshakeTimeout,
             .socksHandshakeTimeout, .httpProxyHandshakeTimeout, .getConnectionFromPoolTimeout:
            return failure(.timedOut, error)
        case .remoteConnectionClosed, .uncleanShutdown:
            return failure(.connectionLost, error)
        case .invalidURL, .emptyHost, .emptyScheme, .missingSocketPath:
            return .invalidRequest(.malformedURL("\(error)"))
        case .identityCodingIncorrectlyPresent:
            return failure(.invalidResponse, error)
        case .invalidProxyResponse:
            // AsyncHTTPClient reaches every origin through a proxy by CONNECT (http ones too):
            // any answer but 2xx or 407 means no tunnel, and nothing reached the origin.
            return .transport(TransportFailure(.cannotConnect, "the proxy refused the tunnel (CONNECT answered neither 2xx nor 407: wrong proxy credentials with some proxies, such as tinyproxy's 401, or a port the proxy does not tunnel to)"))
        case .proxyAuthenticationRequired:
            // The proxy's 407 to CONNECT: the tunnel was not opened, and the credentials (if
            // any) are not repeated here.
            return .transport(TransportFailure(.cannotConnect, "the proxy refused the tunnel: 407 Proxy Authentication Required (missing or wrong proxy credentials)"))
        default:
            return failure(.other, error)
        }
    }

    private static func map(_ error: NIOConnectionError) -> NetworkError {
        if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
            return failure(.dns, error)
        }
        let kinds = error.connectionErrors.compactMap { ($0.error as? IOError).map { kind(errno: $0.errnoCode) } }
        if !kinds.isEmpty, kinds.allSatisfy({ $0 == .notConnected }) { return failure(.notConnected, error) }
        return failure(.cannotConnect, error)
    }

    private static func map(_ error: ChannelError) -> NetworkError {
        switch error {
        case .connectTimeout:
            failure(.timedOut, error)
        case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
            failure(.connectionLost, error)
        default:
            failure(.other, error)
        }
    }

    private static func kind(errno code: Int32) -> TransportFailure.Kind {
        switch code {
        case ECONNREFUSED, EHOSTUNREACH, EADDRNOTAVAIL: .cannotConnect
        case ENETUNREACH, ENETDOWN: .notConnected
        case ECONNRESET, EPIPE, ECONNABORTED, ESHUTDOWN: .connectionLost
        case ETIMEDOUT: .timedOut
        default: .other
        }
    }

    private static func failure(_ kind: TransportFailure.Kind, _ error: any Error) -> NetworkError {
        .transport(TransportFailure(kind, String(describing: error)))
    }
}
