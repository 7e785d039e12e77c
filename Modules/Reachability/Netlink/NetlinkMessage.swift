#if os(Linux)
import CNetlink
import Glibc

/// One message read from a NETLINK_ROUTE socket, decoded as far as reachability needs.
enum NetlinkMessage: Sendable {
    /// A link, address or default-route change (or dump entry).
    case event(RoutingState.Event)
    /// A route, as answered to RTM_GETROUTE (or any route that is not a main-table default),
    /// with the sequence number of the request it answers.
    case route(RouteReply, sequence: UInt32)
    /// The end of the dump with this sequence number.
    case done(sequence: UInt32)
    /// An error (or, with `code` 0, an acknowledgement) for the request with this sequence number;
    /// `code` is a negative errno.
    case error(sequence: UInt32, code: Int32)
    /// The sender dropped messages because our receive buffer overflowed.
    case overrun
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
enum NetlinkDecoder {
    static func decode(_ buffer: UnsafeMutableRawPointer, length: Int) -> [NetlinkMessage] {
        var messages: [NetlinkMessage] = []
        var remaining = Int32(length)
        var header = buffer.assumingMemoryBound(to: nlmsghdr.self)
        while cnl_nlmsg_ok(header, remaining) != 0 {
            messages.append(decode(header))
            header = cnl_nlmsg_next(header, &remaining)
        }
        return messages
    }

    private static func decode(_ header: UnsafeMutablePointer<nlmsghdr>) -> NetlinkMessage {
        let type = Int32(header.pointee.nlmsg_type)
        let payload = UnsafeRawPointer(cnl_nlmsg_data(header)!)
        switch type {
        case NLMSG_DONE:
            return .done(sequence: header.pointee.nlmsg_seq)
        case NLMSG_ERROR:
            let error = payload.loadUnaligned(as: nlmsgerr.self)
            return .error(sequence: error.msg.nlmsg_seq, code: error.error)
        case NLMSG_OVERRUN:
            return .overrun
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
            return decodeLink(header, removed: type == Int32(RTM_DELLINK))
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
            return decodeAddress(header, removed: type == Int32(RTM_DELADDR))
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            guard let route = decodeRoute(header) else { return .other }
            let defaults = route.defaultRoutes
            if defaults.isEmpty { return .route(route, sequence: header.pointee.nlmsg_seq) }
            if type == Int32(RTM_DELROUTE) { return .event(.defaultRoutesRemoved(defaults)) }
            let replacing = Int32(header.pointee.nlmsg_flags) & NLM_F_REPLACE != 0
            return .event(.defaultRoutes(defaults, replacing: replacing))
        default:
            return .other
        }
    }

    private static func decodeLink(_ header: UnsafeMutablePointer<nlmsghdr>, removed: Bool) -> NetlinkMessage {
        let info = cnl_nlmsg_data(header)!.assumingMemoryBound(to: ifinfomsg.self)
        let index = info.pointee.ifi_index
        if removed { return .event(.linkRemoved(index: index)) }
        var name = ""
        var carrier: Bool?
        var linkMode: UInt8 = 0
        var operState: UInt8 = 0
        forEachAttribute(cnl_ifla_rta(info), length: cnl_ifla_payload(header)) { type, data, length in
            switch type {
            case Int(IFLA_IFNAME): name = string(data, length)
            case Int(IFLA_CARRIER) where length >= 1: carrier = data.load(as: UInt8.self) != 0
            case Int(IFLA_LINKMODE) where length >= 1: linkMode = data.load(as: UInt8.self)
            case Int(IFLA_OPERSTATE) where length >= 1: operState = data.load(as: UInt8.self)
            default: break
            }
        }
        let flags = info.pointee.ifi_flags
        let link = RoutingState.Link(index: index, name: name, flags: flags, carrier: carrier ?? (flags & LinkFlags.lowerUp != 0), linkMode: linkMode, operState: operState)
        return .event(.link(link))
    }

    private static func decodeAddress(_ header: UnsafeMutablePointer<nlmsghdr>, removed: Bool) -> NetlinkMessage {
        let message = cnl_nlmsg_data(header)!.assumingMemoryBound(to: ifaddrmsg.self)
        guard let family = family(message.pointee.ifa_family) else { return .other }
        var local: [UInt8]?
        var address: [UInt8]?
        var flags = UInt32(message.pointee.ifa_flags)
        forEachAttribute(cnl_ifa_rta(message), length: cnl_ifa_payload(header)) { type, data, length in
            switch type {
            case Int(IFA_LOCAL): local = bytes(data, length)
            case Int(IFA_ADDRESS): address = bytes(data, length)
            case Int(IFA_FLAGS) where length >= 4: flags = data.loadUnaligned(as: UInt32.self)
            default: break
            }
        }
        // IFA_LOCAL is the interface's own address on point-to-point links; IFA_ADDRESS otherwise.
        guard let own = local ?? address else { return .other }
        let key = RoutingState.Address(interfaceIndex: Int32(message.pointee.ifa_index), family: family, bytes: own, prefixLength: message.pointee.ifa_prefixlen)
        if removed { return .event(.addressRemoved(key)) }
        return .event(.address(key, RoutingState.AddressDetails(scope: message.pointee.ifa_scope, flags: flags)))
    }

    static func decodeRoute(_ header: UnsafeMutablePointer<nlmsghdr>) -> RouteReply? {
        let message = cnl_nlmsg_data(header)!.assumingMemoryBound(to: rtmsg.self)
        guard let family = family(message.pointee.rtm_family) else { return nil }
        var route = RouteReply(
            family: family, table: UInt32(message.pointee.rtm_table), destinationLength: message.pointee.rtm_dst_len,
            type: message.pointee.rtm_type, interfaceIndex: nil, gateway: nil, preferredSource: nil, priority: 0, nextHops: []
        )
        forEachAttribute(cnl_rtm_rta(message), length: cnl_rtm_payload(header)) { type, data, length in
            switch type {
            case Int(RTA_TABLE.rawValue) where length >= 4: route.table = data.loadUnaligned(as: UInt32.self)
            case Int(RTA_OIF.rawValue) where length >= 4: route.interfaceIndex = data.loadUnaligned(as: Int32.self)
            case Int(RTA_GATEWAY.rawValue): route.gateway = bytes(data, length)
            case Int(RTA_PREFSRC.rawValue): route.preferredSource = bytes(data, length)
            case Int(RTA_PRIORITY.rawValue) where length >= 4: route.priority = data.loadUnaligned(as: UInt32.self)
            case Int(RTA_MULTIPATH.rawValue): route.nextHops = nextHops(data, length)
            default: break
            }
        }
        return route
    }

    private static func nextHops(_ data: UnsafeMutableRawPointer, _ length: Int) -> [(Int32, [UInt8])] {
        var hops: [(Int32, [UInt8])] = []
        var remaining = Int32(length)
        var hop = data.assumingMemoryBound(to: rtnexthop.self)
        while cnl_rtnh_ok(hop, remaining) != 0 {
            var gateway: [UInt8] = []
            let attributesLength = Int32(hop.pointee.rtnh_len) - Int32(cnl_rta_align(UInt32(MemoryLayout<rtnexthop>.size)))
            let attributes = (UnsafeMutableRawPointer(hop) + Int(cnl_rta_align(UInt32(MemoryLayout<rtnexthop>.size)))).assumingMemoryBound(to: rtattr.self)
            forEachAttribute(attributes, length: attributesLength) { type, data, length in
                if type == Int(RTA_GATEWAY.rawValue) { gateway = bytes(data, length) }
            }
            hops.append((hop.pointee.rtnh_ifindex, gateway))
            hop = cnl_rtnh_next(hop, &remaining)
        }
        return hops
    }

    private static func forEachAttribute(
        _ first: UnsafeMutablePointer<rtattr>?, length: Int32,
        _ body: (_ type: Int, _ data: UnsafeMutableRawPointer, _ length: Int) -> Void
    ) {
        guard var attribute = first else { return }
        var remaining = length
        while cnl_rta_ok(attribute, remaining) != 0 {
            body(Int(attribute.pointee.rta_type & 0x3FFF), cnl_rta_data(attribute)!, Int(cnl_rta_payload(attribute)))
            attribute = cnl_rta_next(attribute, &remaining)
        }
    }

    static func family(_ value: UInt8) -> AddressFamily? {
        switch Int32(value) {
        case AF_INET: .ipv4
        case AF_INET6: .ipv6
        default: nil
        }
    }

    private static func bytes(_ data: UnsafeMutableRawPointer, _ length: Int) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: data, count: length))
    }

    private static func string(_ data: UnsafeMutableRawPointer, _ length: Int) -> String {
        let raw = UnsafeRawBufferPointer(start: data, count: length)
        return String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
}
#endif
