public import Foundation
import HTTPCore
#if canImport(Glibc)
import Glibc
#endif

/// The sd_notify protocol, spoken directly: datagrams to the unix socket named by
/// `NOTIFY_SOCKET` (a path, or `@name` for an abstract socket). No libsystemd.
public struct SystemdNotifier: Sendable {
    /// Where the messages go: `NOTIFY_SOCKET`.
    public let socketPath: String
    /// `WATCHDOG_USEC`, when systemd asks for watchdog pings: with no ping for this long,
    /// systemd deems the service hung and restarts it.
    public let watchdogTimeout: Duration?

    /// A notifier when `NOTIFY_SOCKET` is set (systemd runs the process as `Type=notify`),
    /// `nil` otherwise. The watchdog timeout is `WATCHDOG_USEC` when `WATCHDOG_PID`, if set,
    /// names this process.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        socketPath = path
        if let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0,
           environment["WATCHDOG_PID"].map({ $0 == String(getpid()) }) ?? true {
            watchdogTimeout = .microseconds(microseconds)
        } else {
            watchdogTimeout = nil
        }
    }

    /// Sends `state` (such as `READY=1`, or several `NAME=value` lines); returns whether it
    /// went out. Never blocks: a datagram on a unix socket, sent with `MSG_DONTWAIT`. A socket
    /// whose queue is full (`net.unix.max_dgram_qlen` datagrams nobody has read yet) drops it
    /// and this returns `false`: a plain `sendto` would wait there until the reader catches up,
    /// holding a thread of the cooperative pool and every task behind it, a shutdown included.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }   // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, message, message.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length)
            }
        }
        return sent == message.count
    }

    /// ``notify(_:)``, tried again every 50 ms (on the boot clock) while the socket's queue is
    /// full, for up to `patience`: for the messages systemd must hear (`READY=1`,
    /// `STOPPING=1`). Returns whether it went out; never holds a thread while it waits.
    @discardableResult
    public func notify(_ state: String, patience: Duration) async -> Bool {
        let deadline = BootClock.uptime() + Double(patience.components.seconds) + Double(patience.components.attoseconds) / 1e18
        while true {
            if notify(state) { return true }
            guard BootClock.uptime() < deadline, !Task.isCancelled else { return false }
            await BootClock.sleep(for: .milliseconds(50))
        }
    }
}
