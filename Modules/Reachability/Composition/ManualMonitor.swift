/// A monitor whose status you set: for tests, and for platforms without netlink where the app
/// learns about the network some other way.
///
/// ```swift
/// let monitor = ManualMonitor(.offline(.noLink))
/// monitor.status = .online(interface: "wlan0", family: .ipv4)   // every stream sees the change
/// ```
public final class ManualMonitor: NetworkMonitor {
    private let broadcast: StatusBroadcast

    /// A monitor that starts with `status`.
    public init(_ status: NetworkStatus = .online(interface: "", family: .ipv4)) {
        broadcast = StatusBroadcast(status)
    }

    /// The status; setting it publishes a change (setting the same value again does nothing).
    public var status: NetworkStatus {
        get { broadcast.status }
        set { broadcast.publish(newValue) }
    }

    /// The current status at once, then every change, until ``stop()``.
    public func statusUpdates() -> AsyncStream<NetworkStatus> { broadcast.stream() }

    /// Ends every stream; later changes are ignored.
    public func stop() { broadcast.finish() }
}
