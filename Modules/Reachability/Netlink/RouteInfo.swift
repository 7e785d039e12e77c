/// The kernel's answer to "how would a packet to this address leave?" (RTM_GETROUTE).
///
/// ```swift
/// if let route = try await monitor.route(to: "10.0.0.7"), route.isReachable {
///     print("via \(route.interface), gateway \(route.gateway ?? "none")")
/// }
/// ```
public struct RouteInfo: Sendable, Hashable, CustomStringConvertible {
    /// How the kernel would deliver the packet.
    public enum Kind: String, Sendable, Hashable {
        /// To an address of this host (loopback or one of its own addresses).
        case local
        /// Out of an interface, directly or through a gateway.
        case unicast
        /// Any other route type (broadcast, multicast...).
        case other
    }

    /// The destination asked about.
    public var destination: String
    /// The family of the destination.
    public var family: AddressFamily
    /// The kind of route.
    public var kind: Kind
    /// The outgoing interface's name (empty when the monitor has not seen that link).
    public var interface: String
    /// The outgoing interface's index.
    public var interfaceIndex: Int32
    /// The next hop, when the destination is not directly connected.
    public var gateway: String?
    /// The source address the kernel would use.
    public var source: String?
    /// Whether the outgoing interface is up, running and has carrier.
    public var interfaceIsUsable: Bool

    /// Whether traffic to the destination can leave now: a route exists and its interface is
    /// usable. A route through an interface without carrier is kept by the kernel but is not
    /// reachable.
    public var isReachable: Bool { interfaceIsUsable }

    /// A route as described; ``NetlinkMonitor/route(to:)`` makes these.
    public init(destination: String, family: AddressFamily, kind: Kind, interface: String, interfaceIndex: Int32, gateway: String? = nil, source: String? = nil, interfaceIsUsable: Bool) {
        self.destination = destination
        self.family = family
        self.kind = kind
        self.interface = interface
        self.interfaceIndex = interfaceIndex
        self.gateway = gateway
        self.source = source
        self.interfaceIsUsable = interfaceIsUsable
    }

    /// A form like `ip route get` prints: `10.0.0.7: unicast dev eth0 via 10.0.0.1 src 10.0.0.2`.
    public var description: String {
        var text = "\(destination): \(kind.rawValue) dev \(interface.isEmpty ? "#\(interfaceIndex)" : interface)"
        if let gateway { text += " via \(gateway)" }
        if let source { text += " src \(source)" }
        return text + (interfaceIsUsable ? "" : " (interface not usable)")
    }
}
