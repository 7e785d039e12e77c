#if os(Linux)
import CNetlink
import Glibc
@testable import Reachability

/// Builds netlink datagrams byte by byte, so tests can say exactly which length lies.
enum NetlinkBytes {
    /// A message: a 16-byte header and `payload`, padded to 4 bytes. `length` overrides
    /// `nlmsg_len` (which is otherwise 16 + the payload's size).
    static func message(type: Int, flags: Int32 = 0, sequence: UInt32 = 0, payload: [UInt8], length: UInt32? = nil) -> [UInt8] {
        var bytes = le(length ?? UInt32(16 + payload.count)) + le(UInt16(type)) + le(UInt16(flags)) + le(sequence) + le(UInt32(0))
        bytes += payload
        return pad(bytes)
    }

    /// An attribute: a 4-byte header and `value`, padded to 4 bytes. `length` overrides `rta_len`.
    static func attribute(_ type: Int, _ value: [UInt8], length: UInt16? = nil) -> [UInt8] {
        pad(le(length ?? UInt16(4 + value.count)) + le(UInt16(type)) + value)
    }

    /// An `ifinfomsg` (16 bytes).
    static func linkHeader(index: Int32, flags: UInt32) -> [UInt8] {
        [UInt8(AF_UNSPEC), 0] + le(UInt16(1)) + le(UInt32(bitPattern: index)) + le(flags) + le(UInt32(0))
    }

    /// An `ifaddrmsg` (8 bytes).
    static func addressHeader(family: Int32, prefix: UInt8, index: UInt32, scope: UInt8 = 0) -> [UInt8] {
        [UInt8(family), prefix, 0, scope] + le(index)
    }

    /// An `rtmsg` (12 bytes) of the main table, unicast, destination length `dst`.
    static func routeHeader(family: Int32, dst: UInt8 = 0) -> [UInt8] {
        [UInt8(family), dst, 0, 0, UInt8(RT_TABLE_MAIN.rawValue), UInt8(RTPROT_BOOT), UInt8(RT_SCOPE_UNIVERSE.rawValue), UInt8(RTN_UNICAST)] + le(UInt32(0))
    }

    /// A usable link `name` with index `index`, as RTM_NEWLINK.
    static func link(index: Int32, name: String, flags: UInt32 = 0x1 | 0x40 | 0x10000, sequence: UInt32 = 0) -> [UInt8] {
        message(
            type: Int(RTM_NEWLINK), flags: NLM_F_MULTI, sequence: sequence,
            payload: linkHeader(index: index, flags: flags) + attribute(Int(IFLA_IFNAME), Array(name.utf8) + [0]) + attribute(Int(IFLA_CARRIER), [1])
        )
    }

    /// A global IPv4 address on link `index`, as RTM_NEWADDR.
    static func address(_ bytes: [UInt8], index: UInt32, sequence: UInt32 = 0) -> [UInt8] {
        message(
            type: Int(RTM_NEWADDR), flags: NLM_F_MULTI, sequence: sequence,
            payload: addressHeader(family: AF_INET, prefix: 24, index: index) + attribute(Int(IFA_LOCAL), bytes) + attribute(Int(IFA_ADDRESS), bytes)
        )
    }

    /// An IPv4 default route through link `index` and `gateway`, as RTM_NEWROUTE.
    static func defaultRoute(index: Int32, gateway: [UInt8], sequence: UInt32 = 0, flags: Int32 = NLM_F_MULTI) -> [UInt8] {
        message(
            type: Int(RTM_NEWROUTE), flags: flags, sequence: sequence,
            payload: routeHeader(family: AF_INET) + attribute(Int(RTA_TABLE.rawValue), le(UInt32(RT_TABLE_MAIN.rawValue)))
                + attribute(Int(RTA_GATEWAY.rawValue), gateway) + attribute(Int(RTA_OIF.rawValue), le(UInt32(bitPattern: index)))
        )
    }

    /// An IPv4 multipath default route: one next hop per `(index, gateway)`.
    static func multipathRoute(_ hops: [(Int32, [UInt8])], sequence: UInt32 = 0) -> [UInt8] {
        let nextHops = hops.flatMap { index, gateway in
            let attributes = attribute(Int(RTA_GATEWAY.rawValue), gateway)
            return le(UInt16(8 + attributes.count)) + [0, 0] + le(UInt32(bitPattern: index)) + attributes
        }
        return message(
            type: Int(RTM_NEWROUTE), flags: NLM_F_MULTI, sequence: sequence,
            payload: routeHeader(family: AF_INET) + attribute(Int(RTA_MULTIPATH.rawValue), nextHops)
        )
    }

    /// NLMSG_DONE for `sequence`.
    static func done(sequence: UInt32, flags: Int32 = NLM_F_MULTI) -> [UInt8] {
        message(type: Int(NLMSG_DONE), flags: flags, sequence: sequence, payload: le(UInt32(0)))
    }

    /// Little-endian (host order on every Linux Swift runs on) bytes of `value`.
    static func le<Value: FixedWidthInteger>(_ value: Value) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    static func pad(_ bytes: [UInt8]) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }
}

extension NetlinkDecoder {
    /// Decodes `bytes` as one datagram.
    static func decode(_ bytes: [UInt8]) -> [NetlinkMessage] {
        bytes.withUnsafeBytes { decode($0) }
    }
}
#endif
