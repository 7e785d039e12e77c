/// Why a reachability monitor or query could not do its work.
///
/// A struct over a private code, as AsyncHTTPClient's `HTTPClientError` is, so that a new kind
/// is an addition, not a break of every exhaustive `switch`. Match a kind with
/// `catch ReachabilityError.Kind.namespace`, or compare ``kind``; read the details from the
/// properties.
public struct ReachabilityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong: one of the static members. Compare with `==`, or in a `switch` that has
    /// a `default` (kinds are added in new versions).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Code: String, Sendable, Hashable {
            case namespace, system, timedOut, kernel, invalidAddress, stopped, unsupportedPlatform
        }

        fileprivate let code: Code

        /// The network namespace could not be joined (missing, or not permitted).
        public static let namespace = Kind(code: .namespace)
        /// A system call on the netlink socket failed.
        public static let system = Kind(code: .system)
        /// The kernel did not answer a netlink request in time.
        public static let timedOut = Kind(code: .timedOut)
        /// The kernel refused a netlink request.
        public static let kernel = Kind(code: .kernel)
        /// The text is not an IPv4 or IPv6 address.
        public static let invalidAddress = Kind(code: .invalidAddress)
        /// The monitor was stopped.
        public static let stopped = Kind(code: .stopped)
        /// Netlink exists only on Linux.
        public static let unsupportedPlatform = Kind(code: .unsupportedPlatform)

        /// The kind's name, such as `timedOut`.
        public var description: String { code.rawValue }

        /// `catch ReachabilityError.Kind.stopped`: an error of this kind.
        public static func ~= (kind: Kind, error: any Error) -> Bool {
            (error as? ReachabilityError)?.kind == kind
        }

        /// The same, where the error's type is known (a `do throws(ReachabilityError)`).
        public static func ~= (kind: Kind, error: ReachabilityError) -> Bool {
            error.kind == kind
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// What failed, in words: the namespace's path (`namespace`), the system call (`system`),
    /// the request (`timedOut`, `kernel`), or the text that is not an address (`invalidAddress`).
    public let subject: String?
    /// The system's error number, for `namespace`, `system` and `kernel`.
    public let errno: Int32?

    private init(_ code: Kind.Code, subject: String? = nil, errno: Int32? = nil) {
        kind = Kind(code: code)
        self.subject = subject
        self.errno = errno
    }

    /// The network namespace at `path` could not be joined.
    public static func namespace(path: String, errno: Int32) -> ReachabilityError { ReachabilityError(.namespace, subject: path, errno: errno) }
    /// A system call on the netlink socket failed.
    public static func system(call: String, errno: Int32) -> ReachabilityError { ReachabilityError(.system, subject: call, errno: errno) }
    /// The kernel did not answer `request` in time.
    public static func timedOut(_ request: String) -> ReachabilityError { ReachabilityError(.timedOut, subject: request) }
    /// The kernel refused `request`.
    public static func kernel(request: String, errno: Int32) -> ReachabilityError { ReachabilityError(.kernel, subject: request, errno: errno) }
    /// `text` is not an IPv4 or IPv6 address.
    public static func invalidAddress(_ text: String) -> ReachabilityError { ReachabilityError(.invalidAddress, subject: text) }
    /// The monitor was stopped.
    public static let stopped = ReachabilityError(.stopped)
    /// Netlink exists only on Linux.
    public static let unsupportedPlatform = ReachabilityError(.unsupportedPlatform)

    /// What went wrong, with the system's message for an errno.
    public var description: String {
        let subject = subject ?? "?", message = Self.message(errno ?? 0)
        return switch kind.code {
        case .namespace: "cannot use network namespace \(subject): \(message)"
        case .system: "\(subject) failed: \(message)"
        case .timedOut: "no answer from the kernel to \(subject)"
        case .kernel: "kernel refused \(subject): \(message)"
        case .invalidAddress: "not an IP address: \(subject)"
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
