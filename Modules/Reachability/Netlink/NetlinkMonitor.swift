import HTTPCore
#if os(Linux)
import CNetlink
import Glibc
#endif

/// Watches the kernel's links, addresses and routes over netlink and says whether a default
/// route can carry traffic (Linux only).
///
/// One NETLINK_ROUTE socket subscribed to link, IPv4/IPv6 address and IPv4/IPv6 route groups
/// feeds a dedicated thread that blocks until the kernel speaks: a status change is published
/// within a millisecond or so of the kernel's message, with no polling interval. The initial
/// state comes from a dump taken in the initializer, so ``status`` is right from the start.
///
/// Online means a default route in the main table goes through an interface that is up,
/// running, has carrier and has a usable address of the route's family; otherwise the status
/// says which of those is missing (see ``OfflineReason``).
///
/// ```swift
/// let monitor = try NetlinkMonitor()                          // this process's namespace
/// let inside = try NetlinkMonitor(namespacePath: "/var/run/netns/lab")  // another namespace
/// for await status in monitor.statusUpdates() { print(status) }
/// ```
///
/// Call ``stop()`` (or drop the last reference) to close the socket and end every stream.
public final class NetlinkMonitor: NetworkMonitor {
    #if os(Linux)
    /// Internal rather than private so tests can reach the sockets (their port ids, the count
    /// of dropped foreign datagrams).
    let loop: NetlinkEventLoop
    #endif

    /// Opens the sockets and takes the initial dump (a few system calls; it does not wait for
    /// the network).
    ///
    /// - Parameter namespacePath: a network namespace file such as `/var/run/netns/NAME` to
    ///   watch instead of the caller's own. The sockets are created by a short-lived thread that
    ///   joins that namespace; a netlink socket stays in the namespace it was created in, so no
    ///   other thread of the process changes namespace.
    /// - Throws: ``ReachabilityError`` when the namespace cannot be joined or the kernel does not
    ///   answer; ``ReachabilityError/unsupportedPlatform`` outside Linux.
    public convenience init(namespacePath: String? = nil) throws(ReachabilityError) {
        try self.init(namespacePath: namespacePath, receiveBufferSize: 4 << 20)
    }

    /// A monitor whose event socket has a receive buffer of `receiveBufferSize` bytes, read
    /// through a buffer of `eventBufferSize` bytes (256 KiB when `nil`); tests use tiny ones to
    /// provoke overruns (ENOBUFS) and truncated datagrams (MSG_TRUNC).
    package init(namespacePath: String?, receiveBufferSize: Int, eventBufferSize: Int? = nil) throws(ReachabilityError) {
        #if os(Linux)
        loop = try NetlinkEventLoop(
            namespacePath: namespacePath, receiveBufferSize: receiveBufferSize,
            eventBufferSize: eventBufferSize ?? NetlinkEventLoop.bufferSize
        )
        #else
        throw .unsupportedPlatform
        #endif
    }

    deinit { stop() }

    /// The status now, as of the last netlink message.
    public var status: NetworkStatus {
        #if os(Linux)
        loop.broadcast.status
        #else
        .offline(.noLink)
        #endif
    }

    /// The current status at once, then every change, until ``stop()``.
    public func statusUpdates() -> AsyncStream<NetworkStatus> {
        #if os(Linux)
        loop.broadcast.stream()
        #else
        AsyncStream { $0.finish() }
        #endif
    }

    /// Stops watching: the event thread closes its sockets and every status stream finishes;
    /// ``route(to:)`` then throws.
    public func stop() {
        #if os(Linux)
        loop.stop()
        #endif
    }

    /// How many times the monitor re-read the whole state because events were lost: the kernel
    /// overran its socket buffer (ENOBUFS), a datagram was cut short (MSG_TRUNC) or a message
    /// was malformed.
    public var resynchronizations: Int {
        #if os(Linux)
        loop.resyncs.current
        #else
        0
        #endif
    }

    /// The status computed from a fresh dump on the request socket, ignoring the event stream.
    /// This is what a polling monitor would do on every tick; the benchmark uses it as its
    /// baseline.
    package func dumpStatus() throws(ReachabilityError) -> NetworkStatus {
        #if os(Linux)
        try withRequestSocket { socket throws(ReachabilityError) in try NetlinkEventLoop.dump(socket).status }
        #else
        throw .unsupportedPlatform
        #endif
    }

    #if os(Linux)
    /// The routing state the event thread last published.
    var routingState: RoutingState { loop.snapshot.current }

    /// Runs `body` with the request socket, one caller at a time.
    func withRequestSocket<Value>(_ body: (NetlinkSocket) throws(ReachabilityError) -> Value) throws(ReachabilityError) -> Value {
        try loop.requests.withLock { socket in
            Result { () throws(ReachabilityError) in
                guard let socket else { throw .stopped }
                return try body(socket)
            }
        }.get()
    }
    #endif
}
