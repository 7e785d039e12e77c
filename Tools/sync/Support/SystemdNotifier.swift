import Foundation
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// The sd_notify protocol, spoken directly: datagrams to the unix socket named by
/// `NOTIFY_SOCKET` (a path, or `@name` for an abstract socket). No libsystemd.
struct SystemdNotifier: Sendable {
    let socketPath: String
    /// Half of `WATCHDOG_USEC`, when systemd asks for watchdog pings.
    let watchdogInterval: Duration?

    /// A notifier when `NOTIFY_SOCKET` is set, `nil` otherwise.
    init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        socketPath = path
        if let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0,
           environment["WATCHDOG_PID"].map({ $0 == String(getpid()) }) ?? true {
            watchdogInterval = .microseconds(microseconds / 2)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `state` (such as `READY=1`); returns whether it went out.
    @discardableResult
    func notify(_ state: String) -> Bool {
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
                sendto(fd, message, message.count, Int32(MSG_NOSIGNAL), socketAddress, length)
            }
        }
        return sent == message.count
    }
}

/// A service that tells systemd the queue service is up (`READY=1`), pings the watchdog while
/// it runs, and says `STOPPING=1` when a graceful shutdown starts.
struct NotifierService: Service {
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        notifier.notify("READY=1\nSTATUS=draining the queue")
        logger.debug("sent READY=1", metadata: ["socket": "\(notifier.socketPath)"])
        if let interval = notifier.watchdogInterval {
            try? await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    notifier.notify("WATCHDOG=1")
                    try await Task.sleep(for: interval)
                }
            }
        } else {
            try? await gracefulShutdown()
        }
        // The group shuts services down in reverse order: this one (listed last) first, so
        // systemd hears STOPPING=1 before the queue starts winding down.
        notifier.notify("STOPPING=1")
        logger.debug("sent STOPPING=1")
    }
}
