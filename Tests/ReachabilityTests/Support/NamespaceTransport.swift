#if os(Linux)
import CNetlink
import Foundation
import HTTPCore
import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 transport for tests whose TCP socket is created inside a network
/// namespace, so a probe from this (root-namespace) process travels the namespace's own links
/// and routes. One `GET` per connection, `Connection: close`, body read to the end. Test-only:
/// no TLS, no chunked decoding, no request body.
struct NamespaceTransport: Transport {
    /// The namespace file, such as `/var/run/netns/NAME`.
    let namespacePath: String

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        guard let authority = request.authority, let path = request.path else {
            throw NetworkError.invalidRequest(.other("no authority or path"))
        }
        let (host, port) = Self.split(authority)
        let seconds = timeout?.components.seconds ?? 10
        let namespacePath = namespacePath
        let method = request.method.rawValue
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<(Int, Data), NetworkError>, Never>) in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(NetworkError) in
                    try Self.exchange(namespacePath: namespacePath, host: host, port: port, head: "\(method) \(path) HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n\r\n", seconds: max(1, Int(seconds)))
                })
            }
            thread.start()
        }
        let (status, bodyData) = try result.get()
        return TransportResponse(head: HTTPResponse(status: HTTPResponse.Status(code: status)), body: ByteStream(data: bodyData))
    }

    private static func split(_ authority: String) -> (String, UInt16) {
        guard let colon = authority.lastIndex(of: ":"), let port = UInt16(authority[authority.index(after: colon)...]) else {
            return (authority, 80)
        }
        return (String(authority[..<colon]), port)
    }

    private static func exchange(namespacePath: String, host: String, port: UInt16, head: String, seconds: Int) throws(NetworkError) -> (Int, Data) {
        var error: Int32 = 0
        let fd = namespacePath.withCString { cnl_socket_in_netns($0, AF_INET, Int32(SOCK_STREAM.rawValue), 0, &error) }
        guard fd >= 0 else { throw .transport(TransportFailure(.other, "socket in \(namespacePath): errno \(error)")) }
        defer { close(fd) }
        var limit = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw .invalidRequest(.malformedURL(host)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            let kind: TransportFailure.Kind = code == EINPROGRESS || code == EAGAIN || code == ETIMEDOUT ? .timedOut : code == ENETUNREACH ? .notConnected : .cannotConnect
            throw .transport(TransportFailure(kind, "connect: errno \(code)"))
        }
        let bytes = Array(head.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw .transport(TransportFailure(.connectionLost, "write: errno \(errno)")) }
        var received = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count == 0 { break }
            if count < 0 { throw .transport(TransportFailure(errno == EAGAIN ? .timedOut : .connectionLost, "read: errno \(errno)")) }
            received.append(contentsOf: chunk[0..<count])
        }
        guard let end = received.range(of: Data("\r\n\r\n".utf8)),
              let statusLine = String(data: received[..<end.lowerBound], encoding: .utf8)?.split(separator: "\r\n").first,
              let code = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw .transport(TransportFailure(.invalidResponse, "no HTTP head"))
        }
        return (code, Data(received[end.upperBound...]))
    }
}
#endif
