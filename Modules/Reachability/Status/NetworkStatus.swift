/// What a ``NetworkMonitor`` believes about the network right now.
///
/// ```swift
/// switch monitor.status {
/// case .online(let interface, let family): print("online via \(interface) (\(family))")
/// case .offline(.noCarrier): print("cable unplugged")
/// case .offline(let reason): print("offline: \(reason)")
/// case .limited(.captivePortal): print("log in to the Wi-Fi first")
/// case .limited: print("the network is up but the probe failed")
/// }
/// ```
public enum NetworkStatus: Sendable, Hashable, CustomStringConvertible {
    /// A default route exists through `interface`, which is up, running and has an address of
    /// `family`. `interface` is empty when the monitor cannot name it (a probe on its own).
    case online(interface: String, family: AddressFamily)
    /// No usable path to the outside, and why.
    case offline(OfflineReason)
    /// A path exists, but the world behind it does not answer as expected.
    case limited(LimitedReason)

    /// Whether the status is ``online(interface:family:)``.
    public var isOnline: Bool {
        if case .online = self { return true }
        return false
    }

    /// Whether the status is ``offline(_:)``.
    public var isOffline: Bool {
        if case .offline = self { return true }
        return false
    }

    /// A short form such as `online(eth0, ipv4)` or `offline(noCarrier)`.
    public var description: String {
        switch self {
        case .online(let interface, let family): "online(\(interface.isEmpty ? "?" : interface), \(family))"
        case .offline(let reason): "offline(\(reason))"
        case .limited(let reason): "limited(\(reason))"
        }
    }
}

/// The address family of a route or an address.
public enum AddressFamily: String, Sendable, Hashable, CaseIterable {
    /// IPv4 (AF_INET).
    case ipv4
    /// IPv6 (AF_INET6).
    case ipv6
}

/// Why a monitor says ``NetworkStatus/offline(_:)``, from the lowest layer that fails.
public enum OfflineReason: String, Sendable, Hashable, CaseIterable {
    /// No interface that could carry a default route is administratively up.
    case noLink
    /// The interface is up but has no carrier (cable out, peer down, not associated).
    case noCarrier
    /// The interface is up with carrier but has no usable address of the route's family.
    case noAddress
    /// Interfaces are usable but the main routing table has no default route.
    case noDefaultRoute
}

/// Why a monitor says ``NetworkStatus/limited(_:)``.
public enum LimitedReason: String, Sendable, Hashable, CaseIterable {
    /// No probe has finished yet since the path appeared.
    case unprobed
    /// The probe failed: no answer in time, a refused connection, or an unexpected error status.
    case probeFailed
    /// Something other than the probe's server answered: a redirect, or a page (`200`) where
    /// an empty `204` was expected. Typical of hotel and airport Wi-Fi login pages.
    case captivePortal
}
