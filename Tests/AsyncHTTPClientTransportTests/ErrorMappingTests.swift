import AsyncHTTPClient
@testable import AsyncHTTPClientTransport
#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing

@Suite("AsyncHTTPClient error mapping")
struct ErrorMappingTests {
    static let cases: [(String, any Error, TransportFailure.Kind)] = [
        ("deadline", HTTPClientError.deadlineExceeded, .timedOut),
        ("connect timeout", HTTPClientError.connectTimeout, .timedOut),
        ("read timeout", HTTPClientError.readTimeout, .timedOut),
        ("channel connect timeout", ChannelError.connectTimeout(.seconds(1)), .timedOut),
        ("remote closed", HTTPClientError.remoteConnectionClosed, .connectionLost),
        ("EOF mid-message", HTTPParserError.invalidEOFState, .connectionLost),
        ("channel EOF", ChannelError.eof, .connectionLost),
        ("reset", IOError(errnoCode: ECONNRESET, reason: "read"), .connectionLost),
        ("refused", IOError(errnoCode: ECONNREFUSED, reason: "connect"), .cannotConnect),
        ("no route", IOError(errnoCode: ENETUNREACH, reason: "connect"), .notConnected),
        ("TLS handshake", NIOSSLError.handshakeFailed(.sslError([])), .tls),
        ("bad version", HTTPParserError.invalidVersion, .invalidResponse),
        ("bad header", HTTPParserError.invalidHeaderToken, .invalidResponse),
    ]

    @Test("library errors map to transport failure kinds", arguments: cases.indices)
    func mapping(_ index: Int) {
        let (name, error, kind) = Self.cases[index]
        let mapped = TransportErrorMapping.map(error)
        guard case .transport(let failure) = mapped else {
            Issue.record("\(name): expected .transport(\(kind)), got \(mapped)")
            return
        }
        #expect(failure.kind == kind, "\(name)")
    }

    @Test("cancellation maps to cancelled")
    func cancellation() {
        guard case .cancelled = TransportErrorMapping.map(CancellationError()) else {
            Issue.record("CancellationError did not map to .cancelled")
            return
        }
        guard case .cancelled = TransportErrorMapping.map(HTTPClientError.cancelled) else {
            Issue.record("HTTPClientError.cancelled did not map to .cancelled")
            return
        }
    }

    @Test("NetworkError passes through unchanged")
    func passThrough() {
        guard case .bodyTooLarge(7) = TransportErrorMapping.map(NetworkError.bodyTooLarge(limit: 7)) else {
            Issue.record("NetworkError was changed")
            return
        }
    }
}
