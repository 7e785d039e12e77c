/// The kernel's routing picture as far as reachability cares: links, addresses and default
/// routes of the main table. A pure value: ``NetlinkMonitor`` feeds it parsed events and asks it
/// for the status, so the rules are testable without a socket.
struct RoutingState: Sendable, Equatable {
    /// A network interface.
    struct Link: Sendable, Equatable {
        var index: Int32
        var name: String
        /// `IFF_*` flags as the kernel reports them in `ifinfomsg.ifi_flags`.
        var flags: UInt32
        /// `IFLA_CARRIER` when reported, otherwise `IFF_LOWER_UP`.
        var carrier: Bool
        /// `IFLA_LINKMODE`: 0 default, 1 dormant (a supplicant must authorise the link first).
        var linkMode: UInt8 = 0
        /// `IFLA_OPERSTATE` (RFC 2863): 4 testing, 5 dormant, 6 up, others down or unknown.
        var operState: UInt8 = 0

        var isUp: Bool { flags & LinkFlags.up != 0 }
        var isLoopback: Bool { flags & LinkFlags.loopback != 0 }

        /// Operationally up: `IFF_RUNNING`, or what the kernel is about to make it.
        ///
        /// The kernel's link watcher sets `IFF_RUNNING` (the RFC 2863 operstate) from the
        /// carrier, but batches that work up to a second; the message that says the link came up
        /// with carrier arrives at once. In the default link mode the operstate then becomes UP
        /// unless the link is dormant or testing, so that is taken as running without waiting.
        /// In dormant mode (802.1X, Wi-Fi supplicants) only `IFF_RUNNING` counts.
        var isRunning: Bool {
            if flags & LinkFlags.running != 0 { return true }
            return isUp && carrier && linkMode == 0 && operState != OperState.testing && operState != OperState.dormant
        }

        /// Up, running (operationally up) and with carrier.
        var isUsable: Bool { isUp && isRunning && carrier }
    }

    /// An address assigned to an interface; identity is interface, family, bytes and prefix.
    struct Address: Sendable, Hashable {
        var interfaceIndex: Int32
        var family: AddressFamily
        var bytes: [UInt8]
        var prefixLength: UInt8
    }

    /// Facts about an address that do not change its identity.
    struct AddressDetails: Sendable, Equatable {
        /// `RT_SCOPE_*`: 0 universe, 200 site, 253 link, 254 host.
        var scope: UInt8
        /// `IFA_F_*` flags (tentative, DAD failed, deprecated...).
        var flags: UInt32

        /// Whether the address can source traffic beyond the link: global scope, DAD passed.
        var isUsable: Bool {
            scope < 253 && flags & (AddressFlags.tentative | AddressFlags.dadFailed) == 0
        }
    }

    /// A default route (destination length 0) in the main table, one per next hop.
    struct DefaultRoute: Sendable, Hashable {
        var family: AddressFamily
        var interfaceIndex: Int32
        var gateway: [UInt8]
        var priority: UInt32
    }

    /// A change the kernel reported (or a dump listed).
    enum Event: Sendable, Equatable {
        case link(Link)
        case linkRemoved(index: Int32)
        case address(Address, AddressDetails)
        case addressRemoved(Address)
        /// New default routes; `replacing` when the kernel replaced routes of the same family
        /// and metric (`NLM_F_REPLACE`), which it announces without a separate removal.
        case defaultRoutes([DefaultRoute], replacing: Bool)
        case defaultRoutesRemoved([DefaultRoute])
    }

    private(set) var links: [Int32: Link] = [:]
    private(set) var addresses: [Address: AddressDetails] = [:]
    private(set) var defaultRoutes: Set<DefaultRoute> = []

    mutating func apply(_ event: Event) {
        switch event {
        case .link(let link):
            links[link.index] = link
        case .linkRemoved(let index):
            links[index] = nil
            addresses = addresses.filter { $0.key.interfaceIndex != index }
            defaultRoutes = defaultRoutes.filter { $0.interfaceIndex != index }
        case .address(let address, let details):
            addresses[address] = details
        case .addressRemoved(let address):
            addresses[address] = nil
        case .defaultRoutes(let routes, let replacing):
            if replacing {
                defaultRoutes = defaultRoutes.filter { old in
                    !routes.contains { $0.family == old.family && $0.priority == old.priority }
                }
            }
            defaultRoutes.formUnion(routes)
        case .defaultRoutesRemoved(let routes):
            defaultRoutes.subtract(routes)
        }
    }

    /// Replaces every default route with `routes`, from a fresh route dump.
    mutating func replaceDefaultRoutes(with routes: Set<DefaultRoute>) {
        defaultRoutes = routes
    }

    /// Whether `event` can remove routes without the kernel saying so: IPv4 routes through a
    /// link that goes down, or through a gateway whose subnet loses its address, vanish with no
    /// RTM_DELROUTE.
    static func mayFlushRoutesSilently(_ event: Event) -> Bool {
        switch event {
        case .link(let link): !link.isUp
        case .linkRemoved, .addressRemoved: true
        default: false
        }
    }

    /// Whether interface `index` has a usable address of `family` (any family when `nil`).
    func hasUsableAddress(interface index: Int32, family: AddressFamily?) -> Bool {
        addresses.contains { address, details in
            address.interfaceIndex == index && (family == nil || address.family == family) && details.isUsable
        }
    }

    /// Online when a default route goes through a usable link that has an address of the
    /// route's family; otherwise offline with the reason of the candidate that got furthest.
    var status: NetworkStatus {
        let routes = defaultRoutes.sorted { ($0.priority, $0.family == .ipv4 ? 0 : 1, $0.interfaceIndex) < ($1.priority, $1.family == .ipv4 ? 0 : 1, $1.interfaceIndex) }
        var best: OfflineReason?
        for route in routes {
            let reason = blocker(interface: route.interfaceIndex, family: route.family)
            guard let reason else {
                return .online(interface: links[route.interfaceIndex]?.name ?? "", family: route.family)
            }
            best = Self.furthest(best, reason)
        }
        if let best { return .offline(best) }
        var reason = OfflineReason.noLink
        for link in links.values where !link.isLoopback {
            reason = Self.furthest(reason, blocker(interface: link.index, family: nil) ?? .noDefaultRoute)
        }
        return .offline(reason)
    }

    /// What keeps interface `index` from carrying traffic of `family`, or `nil` if nothing.
    func blocker(interface index: Int32, family: AddressFamily?) -> OfflineReason? {
        guard let link = links[index], link.isUp else { return .noLink }
        guard link.isRunning, link.carrier else { return .noCarrier }
        guard hasUsableAddress(interface: index, family: family) else { return .noAddress }
        return nil
    }

    private static func furthest(_ lhs: OfflineReason?, _ rhs: OfflineReason) -> OfflineReason {
        let order: [OfflineReason] = [.noLink, .noCarrier, .noAddress, .noDefaultRoute]
        guard let lhs else { return rhs }
        return order.firstIndex(of: lhs)! >= order.firstIndex(of: rhs)! ? lhs : rhs
    }
}

/// `IFF_*` values from `<net/if.h>` (stable kernel ABI).
enum LinkFlags {
    static let up: UInt32 = 0x1
    static let loopback: UInt32 = 0x8
    static let running: UInt32 = 0x40
    static let lowerUp: UInt32 = 0x10000
}

/// `IF_OPER_*` values from `<linux/if.h>` (stable kernel ABI).
enum OperState {
    static let testing: UInt8 = 4
    static let dormant: UInt8 = 5
}

/// `IFA_F_*` values from `<linux/if_addr.h>` (stable kernel ABI).
enum AddressFlags {
    static let tentative: UInt32 = 0x40
    static let dadFailed: UInt32 = 0x08
}
