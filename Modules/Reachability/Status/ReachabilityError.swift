/// Why a reachability monitor or query could not do its work.
public enum ReachabilityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The network namespace at `path` could not be joined (missing, or not permitted).
    case namespace(path: String, errno: Int32)
    /// A system call on the netlink socket failed.
    case system(call: String, errno: Int32)
    /// The kernel did not answer a netlink request in time.
    case timedOut(String)
    /// The kernel refused a netlink request.
    case kernel(request: String, errno: Int32)
    /// The text is not an IPv4 or IPv6 address.
    case invalidAddress(String)
    /// The monitor was stopped.
    case stopped
    /// Netlink exists only on Linux.
    case unsupportedPlatform

    /// What went wrong, with the system's message for an errno.
    public var description: String {
        switch self {
        case .namespace(let path, let errno): "cannot use network namespace \(path): \(Self.message(errno))"
        case .system(let call, let errno): "\(call) failed: \(Self.message(errno))"
        case .timedOut(let what): "no answer from the kernel to \(what)"
        case .kernel(let request, let errno): "kernel refused \(request): \(Self.message(errno))"
        case .invalidAddress(let text): "not an IP address: \(text)"
        case .stopped: "the monitor was stopped"
        case .unsupportedPlatform: "netlink is only available on Linux"
        }
    }

    private static func message(_ errno: Int32) -> String {
        "\(String(cString: strerror(errno))) (errno \(errno))"
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
