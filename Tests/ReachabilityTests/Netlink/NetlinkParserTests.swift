#if os(Linux)
import CNetlink
import Glibc
@testable import Reachability
import Testing

/// Security issue 14: every length is checked before the bytes it describes are read. Each
/// datagram here lies about one length; the decoder must skip what it cannot trust and keep
/// what it can.
@Suite("Netlink parser lengths")
struct NetlinkParserTests {
    private typealias B = NetlinkBytes

    @Test("well-formed link, address and default route messages decode as before")
    func wellFormed() {
        let datagram = B.link(index: 2, name: "eth0", sequence: 7) + B.address([10, 0, 0, 1], index: 2, sequence: 7)
            + B.defaultRoute(index: 2, gateway: [10, 0, 0, 254], sequence: 7) + B.done(sequence: 7)
        let messages = NetlinkDecoder.decode(datagram)
        #expect(messages.count == 4)
        guard case .event(.link(let link), 7) = messages[0] else { Issue.record("\(messages[0])"); return }
        #expect(link.name == "eth0" && link.index == 2 && link.carrier)
        let address = RoutingState.Address(interfaceIndex: 2, family: .ipv4, bytes: [10, 0, 0, 1], prefixLength: 24)
        #expect(messages[1] == .event(.address(address, RoutingState.AddressDetails(scope: 0, flags: 0)), sequence: 7))
        let route = RoutingState.DefaultRoute(family: .ipv4, interfaceIndex: 2, gateway: [10, 0, 0, 254], priority: 0)
        #expect(messages[2] == .event(.defaultRoutes([route], replacing: false), sequence: 7))
        #expect(messages[3] == .done(sequence: 7))
    }

    @Test("nlmsg_len smaller than the message header ends the walk, even at 0", arguments: [UInt32(0), 1, 8, 15])
    func shortHeaderLength(length: UInt32) {
        let good = B.link(index: 2, name: "eth0")
        let bad = B.message(type: Int(RTM_NEWLINK), payload: B.linkHeader(index: 3, flags: 1), length: length)
        let messages = NetlinkDecoder.decode(good + bad + good)
        #expect(messages.count == 2, "\(messages)")
        #expect(messages.last == .malformed)
    }

    @Test("nlmsg_len running past the datagram ends the walk")
    func lengthPastDatagram() {
        let bad = B.message(type: Int(RTM_NEWLINK), payload: B.linkHeader(index: 3, flags: 1), length: 4096)
        #expect(NetlinkDecoder.decode(B.link(index: 2, name: "eth0") + bad).last == .malformed)
        #expect(NetlinkDecoder.decode(bad) == [.malformed])
    }

    @Test("a fixed header (ifinfomsg, ifaddrmsg, rtmsg, nlmsgerr) that nlmsg_len does not cover is not read", arguments: [
        (Int(RTM_NEWLINK), B.linkHeader(index: 3, flags: 0x10041)),
        (Int(RTM_NEWADDR), B.addressHeader(family: AF_INET, prefix: 24, index: 3) + B.attribute(Int(IFA_LOCAL), [10, 0, 0, 9])),
        (Int(RTM_NEWROUTE), B.routeHeader(family: AF_INET) + B.attribute(Int(RTA_OIF.rawValue), B.le(UInt32(3)))),
        (Int(NLMSG_ERROR), B.le(Int32(-1)) + [UInt8](repeating: 0, count: 16)),
    ])
    func fixedHeaderNotCovered(type: Int, payload: [UInt8]) {
        // nlmsg_len says header only; the family header's bytes follow in the datagram, so the
        // UAPI macros would read them as if they belonged to the message.
        let datagram = B.message(type: type, payload: payload, length: 16) + B.done(sequence: 1)
        let messages = NetlinkDecoder.decode(datagram)
        #expect(messages.first == .malformed, "\(messages)")
    }

    @Test("an attribute whose rta_len runs past its message makes the message malformed")
    func attributePastMessage() {
        let payload = B.addressHeader(family: AF_INET, prefix: 24, index: 2) + B.attribute(Int(IFA_LOCAL), [10, 0, 0, 1], length: 64)
        let messages = NetlinkDecoder.decode(B.message(type: Int(RTM_NEWADDR), payload: payload) + B.done(sequence: 1))
        #expect(messages == [.malformed, .done(sequence: 1)])
    }

    @Test("an attribute with rta_len below its header (0 included) is malformed and does not loop", arguments: [UInt16(0), 1, 3])
    func attributeShorterThanHeader(length: UInt16) {
        let payload = B.linkHeader(index: 2, flags: 1) + B.attribute(Int(IFLA_IFNAME), [0x65, 0x74, 0x68, 0], length: length)
        #expect(NetlinkDecoder.decode(B.message(type: Int(RTM_NEWLINK), payload: payload)) == [.malformed])
    }

    @Test("a next hop whose rtnh_len runs past RTA_MULTIPATH makes the route malformed")
    func nextHopPastAttribute() {
        var datagram = B.multipathRoute([(2, [10, 0, 0, 254])])
        // rtnh_len sits right after: header 16, rtmsg 12, rta header 4.
        datagram[32] = 200
        #expect(NetlinkDecoder.decode(datagram) == [.malformed])
        let hops = NetlinkDecoder.decode(B.multipathRoute([(2, [10, 0, 0, 254]), (3, [10, 0, 1, 254])]))
        guard case .event(.defaultRoutes(let routes, _), _) = hops.first else { Issue.record("\(hops)"); return }
        #expect(Set(routes.map(\.interfaceIndex)) == [2, 3])
    }

    @Test("attribute values of the wrong size are ignored, not loaded")
    func payloadSizes() {
        // A 3-byte IPv4 address: no address at all.
        let short = B.message(type: Int(RTM_NEWADDR), payload: B.addressHeader(family: AF_INET, prefix: 24, index: 2) + B.attribute(Int(IFA_LOCAL), [10, 0, 0]))
        #expect(NetlinkDecoder.decode(short) == [.other])
        // A 4-byte "IPv6" address likewise.
        let v6 = B.message(type: Int(RTM_NEWADDR), payload: B.addressHeader(family: AF_INET6, prefix: 64, index: 2) + B.attribute(Int(IFA_ADDRESS), [0xfd, 0, 0, 1]))
        #expect(NetlinkDecoder.decode(v6) == [.other])
        // A 2-byte interface index and a 5-byte gateway: the route has neither.
        let route = B.message(
            type: Int(RTM_NEWROUTE),
            payload: B.routeHeader(family: AF_INET) + B.attribute(Int(RTA_OIF.rawValue), [2, 0]) + B.attribute(Int(RTA_GATEWAY.rawValue), [10, 0, 0, 1, 9])
        )
        #expect(NetlinkDecoder.decode(route) == [.route(RouteReply(family: .ipv4, table: UInt32(RT_TABLE_MAIN.rawValue), destinationLength: 0, type: UInt8(RTN_UNICAST), interfaceIndex: nil, gateway: nil, preferredSource: nil, priority: 0, nextHops: []), sequence: 0)])
        // A 2-byte IFA_FLAGS and a 17-byte interface name are ignored; the message stands.
        let link = B.message(type: Int(RTM_NEWLINK), payload: B.linkHeader(index: 4, flags: 1) + B.attribute(Int(IFLA_IFNAME), Array("abcdefghijklmnopq".utf8)) + B.attribute(Int(IFLA_CARRIER), [1, 1]))
        guard case .event(.link(let decoded), _) = NetlinkDecoder.decode(link).first else { Issue.record("link not decoded"); return }
        #expect(decoded.name == "" && decoded.carrier == false)
    }

    @Test("an interface index of 2^31 or more does not trap")
    func largeAddressIndex() {
        let message = B.message(type: Int(RTM_NEWADDR), payload: B.addressHeader(family: AF_INET, prefix: 24, index: 0x8000_0001) + B.attribute(Int(IFA_LOCAL), [10, 0, 0, 1]))
        guard case .event(.address(let address, _), _) = NetlinkDecoder.decode(message).first else { Issue.record("address not decoded"); return }
        #expect(address.interfaceIndex == Int32(bitPattern: 0x8000_0001))
    }

    @Test("NLM_F_DUMP_INTR on a reply is reported before the reply")
    func dumpInterrupted() {
        let flags = NLM_F_MULTI | NLM_F_DUMP_INTR
        let messages = NetlinkDecoder.decode(B.done(sequence: 9, flags: flags))
        #expect(messages == [.dumpInterrupted(sequence: 9), .done(sequence: 9)])
    }

    @Test("padding shorter than a header after the last message is not an error")
    func trailingPadding() {
        #expect(NetlinkDecoder.decode(B.done(sequence: 1) + [0, 0, 0, 0, 0, 0, 0, 0]) == [.done(sequence: 1)])
    }
}
#endif
