import Foundation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP port nothing listens on (bound, read and released), for a server that must
/// not be there.
public func unusedLoopbackPort() throws -> Int {
    try ReservedLoopbackPort().port
}

/// A loopback TCP port held bound, not listening, while this lives: a connection to it is
/// refused, and no other server is given it meanwhile. (A port released at once, as
/// `unusedLoopbackPort()` releases it, or a server's port after its shutdown, may be another
/// test's new server a moment later: a refusal expected there was once an answer.)
public final class ReservedLoopbackPort: Sendable {
    public let port: Int
    private let descriptor: NIOLockedValueBox<Int32>

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound else {
            if fd >= 0 { close(fd) }
            throw TestServerError("cannot reserve a loopback port")
        }
        descriptor = NIOLockedValueBox(fd)
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { release() }

    /// Lets the port go (for a server that is to listen on it now). Twice does nothing.
    public func release() {
        descriptor.withLockedValue { fd in
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
        }
    }
}
