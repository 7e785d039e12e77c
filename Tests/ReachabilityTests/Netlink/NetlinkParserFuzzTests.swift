#if os(Linux)
import CNetlink
import Glibc
import HTTPCore
import PropertyBased
@testable import Reachability
import TestSupport
import Testing

/// Security issue 14: the decoder fed random bytes and mutated real dumps. It must not crash
/// (a trap or an out-of-bounds read kills the test process), must end, and must say only
/// things a datagram of that size can say. Bounded: 20,000 inputs in all, a few seconds.
@Suite("Netlink parser fuzzing", .serialized)
struct NetlinkParserFuzzTests {
    /// Real RTM_GETLINK, RTM_GETADDR and RTM_GETROUTE dump datagrams from a lab namespace (with
    /// a multipath route added), plus hand-built messages for what a lab does not show.
    private static func corpus() async throws -> [[UInt8]] {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        try await lab.inInner("route", "add", "10.99.0.0/16", "nexthop", "via", NetworkLab.outerAddress, "nexthop", "via", "10.77.0.3")
        try await lab.inInner("-6", "route", "add", "default", "via", NetworkLab.outerAddress6)
        let socket = try NetlinkSocket(namespacePath: lab.innerPath, groups: 0)
        defer { socket.close() }
        var datagrams: [[UInt8]] = []
        for kind in NetlinkEventLoop.DumpKind.allCases {
            datagrams += try capture(kind, on: socket)
        }
        let hand = [
            NetlinkBytes.multipathRoute([(2, [10, 0, 0, 1]), (3, [10, 0, 1, 1])], sequence: 3),
            NetlinkBytes.done(sequence: 3, flags: NLM_F_MULTI | NLM_F_DUMP_INTR),
            NetlinkBytes.link(index: 2, name: "eth0") + NetlinkBytes.address([10, 0, 0, 1], index: 2) + NetlinkBytes.defaultRoute(index: 2, gateway: [10, 0, 0, 254]),
        ]
        return datagrams + hand
    }

    /// The datagrams of one dump, up to and including the one with NLMSG_DONE.
    private static func capture(_ kind: NetlinkEventLoop.DumpKind, on socket: NetlinkSocket) throws -> [[UInt8]] {
        let request = kind.request
        let sequence = socket.nextSequence()
        try socket.send(type: request.type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, payload: familyHeader(size: request.size, family: AF_UNSPEC))
        let capacity = NetlinkEventLoop.bufferSize
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        var datagrams: [[UInt8]] = []
        while true {
            guard case .data(let count) = try socket.receive(into: buffer, capacity: capacity, timeout: 60_000) else {
                throw LabError("no whole \(request.name) dump")
            }
            let bytes = UnsafeRawBufferPointer(start: buffer, count: count)
            datagrams.append(Array(bytes))
            if NetlinkDecoder.decode(bytes).contains(.done(sequence: sequence)) { return datagrams }
        }
    }

    @Test("the captured dumps decode whole: links, addresses, default routes of both families, a multipath route")
    func corpusIsReal() async throws {
        let messages = try await Self.corpus().flatMap { NetlinkDecoder.decode($0) }
        #expect(!messages.contains(.malformed))
        #expect(messages.contains { if case .event(.link, _) = $0 { true } else { false } })
        #expect(messages.contains { if case .event(.address(let address, _), _) = $0 { address.family == .ipv6 } else { false } })
        #expect(messages.contains { if case .event(.defaultRoutes(let routes, _), _) = $0 { routes.contains { $0.family == .ipv6 } } else { false } })
        #expect(messages.contains { if case .route(let route, _) = $0 { route.nextHops.count == 2 } else { false } })
    }

    @Test("10,000 mutated real dumps: no crash, sane output")
    func mutatedDumps() async throws {
        let corpus = try await Self.corpus()
        let inputs = LockedBox(0)
        await propertyCheck(count: 10_000, input: Gen.int(in: 0..<corpus.count), Gen.uint64().array(of: 1...8)) { pick, mutations in
            inputs.withLock { $0 += 1 }
            var bytes = corpus[pick]
            for mutation in mutations { Self.mutate(&bytes, with: mutation, donor: corpus[Int(mutation >> 40) % corpus.count]) }
            Self.checkSane(bytes)
        }
        #expect(inputs.current == 10_000)
    }

    @Test("10,000 random datagrams, some with a plausible first header: no crash, sane output")
    func randomBytes() async {
        let inputs = LockedBox(0)
        await propertyCheck(count: 10_000, input: Gen.uint8().array(of: 0...512), Gen.bool()) { random, plausible in
            inputs.withLock { $0 += 1 }
            var bytes = random
            if plausible, bytes.count >= 16 {
                // A length that fits and a type the decoder knows, so the walk gets past the
                // first header into the family headers and attributes.
                let types: [UInt16] = [2, 3, 16, 17, 20, 21, 24, 25]
                bytes.replaceSubrange(0..<4, with: NetlinkBytes.le(UInt32(bytes.count)))
                bytes.replaceSubrange(4..<6, with: NetlinkBytes.le(types[Int(bytes[6]) % types.count]))
            }
            Self.checkSane(bytes)
        }
        #expect(inputs.current == 10_000)
    }

    /// One mutation chosen by the low bits of `op`; the rest of `op` picks where and what.
    static func mutate(_ bytes: inout [UInt8], with op: UInt64, donor: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let at = Int((op >> 8) % UInt64(bytes.count))
        let value = UInt8(truncatingIfNeeded: op >> 32)
        // Lengths near the edges: the values that break length arithmetic.
        let lengths: [UInt16] = [0, 1, 3, 4, 5, 7, 8, 12, 15, 16, 17, 20, 0x7FFF, 0xFFFF, UInt16(truncatingIfNeeded: bytes.count), UInt16(truncatingIfNeeded: bytes.count - at)]
        switch op & 7 {
        case 0: bytes[at] ^= 1 << (value & 7)
        case 1: bytes[at] = value
        case 2, 3:
            // A 16-bit length (rta_len, rtnh_len, low half of nlmsg_len) at a 4-byte boundary,
            // where the length fields are.
            let aligned = at & ~3
            guard aligned + 2 <= bytes.count else { return }
            let length = lengths[Int(value) % lengths.count]
            bytes.replaceSubrange(aligned..<(aligned + 2), with: NetlinkBytes.le(length))
        case 4: bytes.removeSubrange(at...)
        case 5: bytes.removeSubrange(at..<min(bytes.count, at + 1 + Int(value % 32)))
        case 6:
            guard !donor.isEmpty else { return }
            let start = Int(op >> 16) % donor.count
            bytes.insert(contentsOf: donor[start..<min(donor.count, start + 4 + Int(value))], at: at)
        default:
            let aligned = at & ~3
            guard aligned + 4 <= bytes.count else { return }
            bytes.replaceSubrange(aligned..<(aligned + 4), with: NetlinkBytes.le(UInt32(value) << 24 | UInt32(value)))
        }
    }

    /// Decodes `bytes` and checks the output is what a datagram of that size can hold.
    static func checkSane(_ bytes: [UInt8]) {
        let messages = NetlinkDecoder.decode(bytes)
        // Each message takes at least 16 bytes; a DUMP_INTR marker doubles one; one trailing
        // malformed marker.
        #expect(messages.count <= 2 * (bytes.count / 16) + 1)
        for message in messages {
            switch message {
            case .event(.address(let address, _), _), .event(.addressRemoved(let address), _):
                #expect(address.bytes.count == (address.family == .ipv4 ? 4 : 16))
            case .event(.link(let link), _):
                #expect(link.name.utf8.count <= Int(IFNAMSIZ) * 3, "a name of at most 16 bytes, replacement characters aside")
            case .event(.defaultRoutes(let routes, _), _), .event(.defaultRoutesRemoved(let routes), _):
                #expect(routes.allSatisfy { [0, $0.family == .ipv4 ? 4 : 16].contains($0.gateway.count) })
            case .route(let route, _):
                let size = route.family == .ipv4 ? 4 : 16
                #expect([nil, size].contains(route.gateway?.count) && [nil, size].contains(route.preferredSource?.count))
                #expect(route.nextHops.count <= bytes.count / 8)
            default:
                break
            }
        }
    }
}
#endif
