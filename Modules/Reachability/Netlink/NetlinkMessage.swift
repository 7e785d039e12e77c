#if os(Linux)
import CNetlink
import Glibc

/// One message read from a NETLINK_ROUTE socket, decoded as far as reachability needs.
enum NetlinkMessage: Sendable, Equatable {
    /// A link, address or default-route change (or dump entry), from the message with this
    /// sequence number (0 for multicast notifications).
    case event(RoutingState.Event, sequence: UInt32)
    /// A route, as answered to RTM_GETROUTE (or any route that is not a main-table default),
    /// with the sequence number of the request it answers.
    case route(RouteReply, sequence: UInt32)
    /// The end of the dump with this sequence number.
    case done(sequence: UInt32)
    /// An error (or, with `code` 0, an acknowledgement) for the request with this sequence number;
    /// `code` is a negative errno.
    case error(sequence: UInt32, code: Int32)
    /// The kernel flagged a reply to the dump with this sequence number `NLM_F_DUMP_INTR`: the
    /// tables changed while it was being taken, so the dump may be inconsistent. Comes just
    /// before the flagged message's own decoding.
    case dumpInterrupted(sequence: UInt32)
    /// The sender dropped messages because our receive buffer overflowed.
    case overrun
    /// A message whose lengths do not add up (see ``NetlinkFraming``): it was skipped, or, when
    /// its own `nlmsg_len` was impossible, so was the rest of the datagram.
    case malformed
    /// Anything else.
    case other
}

/// A decoded route message.
struct RouteReply: Sendable, Equatable {
    var family: AddressFamily
    var table: UInt32
    var destinationLength: UInt8
    var type: UInt8
    var interfaceIndex: Int32?
    var gateway: [UInt8]?
    var preferredSource: [UInt8]?
    var priority: UInt32
    /// `(interface, gateway)` per next hop of a multipath route.
    var nextHops: [(Int32, [UInt8])]

    static func == (lhs: RouteReply, rhs: RouteReply) -> Bool {
        lhs.family == rhs.family && lhs.table == rhs.table && lhs.destinationLength == rhs.destinationLength
            && lhs.type == rhs.type && lhs.interfaceIndex == rhs.interfaceIndex && lhs.gateway == rhs.gateway
            && lhs.preferredSource == rhs.preferredSource && lhs.priority == rhs.priority
            && lhs.nextHops.map(\.0) == rhs.nextHops.map(\.0) && lhs.nextHops.map(\.1) == rhs.nextHops.map(\.1)
    }

    /// The main-table default routes this message describes, one per next hop.
    var defaultRoutes: [RoutingState.DefaultRoute] {
        guard destinationLength == 0, table == RT_TABLE_MAIN.rawValue, type == UInt8(RTN_UNICAST) else { return [] }
        let hops = nextHops.isEmpty ? interfaceIndex.map { [($0, gateway ?? [])] } ?? [] : nextHops
        return hops.map { RoutingState.DefaultRoute(family: family, interfaceIndex: $0.0, gateway: $0.1, priority: priority) }
    }
}

/// Decodes the messages in one datagram read from a NETLINK_ROUTE socket.
///
/// Every length is checked before the bytes it describes are read (``NetlinkFraming``); a value
/// of the wrong size for its attribute (an IPv4 address that is not 4 bytes, an interface index
/// that is not 4) is ignored as if absent.
enum NetlinkDecoder {
    static func decode(_ datagram: UnsafeRawBufferPointer) -> [NetlinkMessage] {
        let (frames, intact) = NetlinkFraming.frames(in: datagram)
        var messages: [NetlinkMessage] = []
        messages.reserveCapacity(frames.count + 1)
        for frame in frames {
            if Int32(frame.flags) & NLM_F_DUMP_INTR != 0 { messages.append(.dumpInterrupted(sequence: frame.sequence)) }
            messages.append(decode(frame))
        }
        if !intact { messages.append(.malformed) }
        return messages
    }

    private static func decode(_ frame: NetlinkFrame) -> NetlinkMessage {
        let type = Int32(frame.type)
        switch type {
        case NLMSG_DONE:
            return .done(sequence: frame.sequence)
        case NLMSG_ERROR:
            guard let (error, _) = NetlinkFraming.fixedHeader(nlmsgerr.self, in: frame.payload) else { return .malformed }
            return .error(sequence: error.msg.nlmsg_seq, code: error.error)
        case NLMSG_OVERRUN:
            return .overrun
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
            return decodeLink(frame, removed: type == Int32(RTM_DELLINK))
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
            return decodeAddress(frame, removed: type == Int32(RTM_DELADDR))
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            return decodeRoute(frame, removed: type == Int32(RTM_DELROUTE))
        default:
            return .other
        }
    }

    private static func decodeLink(_ frame: NetlinkFrame, removed: Bool) -> NetlinkMessage {
        guard let (info, attributes) = NetlinkFraming.fixedHeader(ifinfomsg.self, in: frame.payload) else { return .malformed }
        if removed { return .event(.linkRemoved(index: info.ifi_index), sequence: frame.sequence) }
        var name = ""
        var carrier: Bool?
        var linkMode: UInt8 = 0
        var operState: UInt8 = 0
        let intact = NetlinkFraming.forEachAttribute(in: attributes) { type, data in
            switch type {
            case Int(IFLA_IFNAME): name = interfaceName(data) ?? name
            case Int(IFLA_CARRIER): carrier = data.exactly(UInt8.self).map { $0 != 0 } ?? carrier
            case Int(IFLA_LINKMODE): linkMode = data.exactly(UInt8.self) ?? linkMode
            case Int(IFLA_OPERSTATE): operState = data.exactly(UInt8.self) ?? operState
            default: break
            }
        }
        guard intact else { return .malformed }
        let flags = info.ifi_flags
        let link = RoutingState.Link(index: info.ifi_index, name: name, flags: flags, carrier: carrier ?? (flags & LinkFlags.lowerUp != 0), linkMode: linkMode, operState: operState)
        return .event(.link(link), sequence: frame.sequence)
    }

    private static func decodeAddress(_ frame: NetlinkFrame, removed: Bool) -> NetlinkMessage {
        guard let (message, attributes) = NetlinkFraming.fixedHeader(ifaddrmsg.self, in: frame.payload) else { return .malformed }
        guard let family = family(message.ifa_family) else { return .other }
        var local: [UInt8]?
        var address: [UInt8]?
        var flags = UInt32(message.ifa_flags)
        let intact = NetlinkFraming.forEachAttribute(in: attributes) { type, data in
            switch type {
            case Int(IFA_LOCAL): local = data.address(of: family) ?? local
            case Int(IFA_ADDRESS): address = data.address(of: family) ?? address
            case Int(IFA_FLAGS): flags = data.exactly(UInt32.self) ?? flags
            default: break
            }
        }
        guard intact else { return .malformed }
        // IFA_LOCAL is the interface's own address on point-to-point links; IFA_ADDRESS otherwise.
        guard let own = local ?? address else { return .other }
        let key = RoutingState.Address(interfaceIndex: Int32(bitPattern: message.ifa_index), family: family, bytes: own, prefixLength: message.ifa_prefixlen)
        if removed { return .event(.addressRemoved(key), sequence: frame.sequence) }
        return .event(.address(key, RoutingState.AddressDetails(scope: message.ifa_scope, flags: flags)), sequence: frame.sequence)
    }

    private static func decodeRoute(_ frame: NetlinkFrame, removed: Bool) -> NetlinkMessage {
        guard let (message, attributes) = NetlinkFraming.fixedHeader(rtmsg.self, in: frame.payload) else { return .malformed }
        guard let family = family(message.rtm_family) else { return .other }
        var route = RouteReply(
            family: family, table: UInt32(message.rtm_table), destinationLength: message.rtm_dst_len,
            type: message.rtm_type, interfaceIndex: nil, gateway: nil, preferredSource: nil, priority: 0, nextHops: []
        )
        var hopsIntact = true
        let intact = NetlinkFraming.forEachAttribute(in: attributes) { type, data in
            switch type {
            case Int(RTA_TABLE.rawValue): route.table = data.exactly(UInt32.self) ?? route.table
            case Int(RTA_OIF.rawValue): route.interfaceIndex = data.exactly(Int32.self) ?? route.interfaceIndex
            case Int(RTA_GATEWAY.rawValue): route.gateway = data.address(of: family) ?? route.gateway
            case Int(RTA_PREFSRC.rawValue): route.preferredSource = data.address(of: family) ?? route.preferredSource
            case Int(RTA_PRIORITY.rawValue): route.priority = data.exactly(UInt32.self) ?? route.priority
            case Int(RTA_MULTIPATH.rawValue):
                if let hops = nextHops(data, family: family) { route.nextHops = hops } else { hopsIntact = false }
            default: break
            }
        }
        guard intact, hopsIntact else { return .malformed }
        let defaults = route.defaultRoutes
        if defaults.isEmpty { return .route(route, sequence: frame.sequence) }
        if removed { return .event(.defaultRoutesRemoved(defaults), sequence: frame.sequence) }
        // The kernel replaces a route of the same family and metric with NLM_F_REPLACE and sends
        // no removal for the old one.
        let replacing = Int32(frame.flags) & NLM_F_REPLACE != 0
        return .event(.defaultRoutes(defaults, replacing: replacing), sequence: frame.sequence)
    }

    /// The `(interface, gateway)` pairs of an RTA_MULTIPATH payload, or `nil` when malformed.
    private static func nextHops(_ data: UnsafeRawBufferPointer, family: AddressFamily) -> [(Int32, [UInt8])]? {
        var hops: [(Int32, [UInt8])] = []
        var attributesIntact = true
        let intact = NetlinkFraming.forEachNextHop(in: data) { index, attributes in
            var gateway: [UInt8] = []
            attributesIntact = NetlinkFraming.forEachAttribute(in: attributes) { type, data in
                if type == Int(RTA_GATEWAY.rawValue) { gateway = data.address(of: family) ?? gateway }
            } && attributesIntact
            hops.append((index, gateway))
        }
        return intact && attributesIntact ? hops : nil
    }

    /// An IFLA_IFNAME value: at most IFNAMSIZ bytes, up to the first NUL.
    private static func interfaceName(_ data: UnsafeRawBufferPointer) -> String? {
        guard data.count <= Int(IFNAMSIZ) else { return nil }
        return String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
    }

    static func family(_ value: UInt8) -> AddressFamily? {
        switch Int32(value) {
        case AF_INET: .ipv4
        case AF_INET6: .ipv6
        default: nil
        }
    }
}
#endif
