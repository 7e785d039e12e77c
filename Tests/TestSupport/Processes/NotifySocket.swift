import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A unix datagram socket bound to a fresh path, standing in for systemd's notify socket.
public final class NotifySocket {
    public let path: String
    private let fd: Int32

    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("sync-notify-\(UUID().uuidString.prefix(8)).sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TestServerError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw TestServerError("bind: \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next datagram, waiting up to `limit` (a hang guard).
    public func receive(limit: Duration = .hangGuard) async -> String? {
        let deadline = ContinuousClock.now + limit
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// Datagrams until one contains `text`, waiting up to `limit` overall.
    public func receive(containing text: String, limit: Duration = .hangGuard) async -> [String] {
        let deadline = ContinuousClock.now + limit
        var seen: [String] = []
        while ContinuousClock.now < deadline, let message = await receive(limit: deadline - ContinuousClock.now) {
            seen.append(message)
            if message.contains(text) { break }
        }
        return seen
    }
}
