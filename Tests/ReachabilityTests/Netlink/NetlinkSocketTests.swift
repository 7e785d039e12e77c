#if os(Linux)
import CNetlink
import Glibc
import HTTPCore
@testable import Reachability
import TestSupport
import Testing

/// Who may speak on the socket and what a datagram too long for the buffer does, against a
/// real kernel in a namespace of the test's own.
@Suite("Netlink socket: sender and truncation", .serialized)
struct NetlinkSocketTests {
    private typealias B = NetlinkBytes

    @Test("a datagram from a process (nl_pid ≠ 0) is dropped; the kernel's reply behind it is read")
    func foreignSenderDropped() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        let socket = try NetlinkSocket(namespacePath: lab.innerPath, groups: 0)
        defer { socket.close() }
        let forger = try Forger(namespacePath: lab.innerPath)
        defer { forger.close() }

        // A forged "dump" that would add a link, sent before the real request: it is first in
        // the queue.
        try forger.send(B.link(index: 99, name: "forged0", sequence: 1) + B.done(sequence: 1), to: socket)
        let sequence = socket.nextSequence()
        try socket.send(type: Int(RTM_GETLINK), flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, payload: familyHeader(size: MemoryLayout<ifinfomsg>.size, family: AF_UNSPEC))

        let buffer = UnsafeMutableRawPointer.allocate(byteCount: NetlinkEventLoop.bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        let received = try socket.receive(into: buffer, capacity: NetlinkEventLoop.bufferSize, timeout: 60_000)
        guard case .data(let count) = received else { Issue.record("received \(received)"); return }
        let messages = NetlinkDecoder.decode(UnsafeRawBufferPointer(start: buffer, count: count))
        #expect(!messages.isEmpty)
        #expect(messages.allSatisfy { if case .event(_, let replyTo) = $0 { replyTo == sequence } else { true } })
        #expect(!messages.contains { if case .event(.link(let link), _) = $0 { link.index == 99 } else { false } })
        #expect(socket.foreignDatagrams.current == 1)
    }

    @Test("a forged default-route removal sent to the monitor's event socket changes nothing")
    func foreignEventIgnoredByMonitor() async throws {
        try await withMonitoredLab { lab, monitor in
            let forger = try Forger(namespacePath: lab.innerPath)
            defer { forger.close() }
            guard let route = monitor.routingState.defaultRoutes.first else { Issue.record("no default route"); return }
            let removal = B.message(
                type: Int(RTM_DELROUTE), payload: B.routeHeader(family: AF_INET) + B.attribute(Int(RTA_TABLE.rawValue), B.le(UInt32(RT_TABLE_MAIN.rawValue)))
                    + B.attribute(Int(RTA_GATEWAY.rawValue), route.gateway) + B.attribute(Int(RTA_OIF.rawValue), B.le(UInt32(bitPattern: route.interfaceIndex)))
            )
            try forger.send(removal, to: monitor.loop.socket)
            // A real change queued behind the forgery: once it shows, the forgery was read.
            try await lab.inInner("addr", "add", "10.88.0.1/32", "dev", lab.innerLink)
            #expect(await waitForAddress([10, 88, 0, 1], in: monitor))
            #expect(monitor.loop.socket.foreignDatagrams.current == 1)
            #expect(monitor.status == .online(interface: lab.innerLink, family: .ipv4))
            #expect(monitor.routingState.defaultRoutes.contains(route))
        }
    }

    @Test("a datagram longer than the buffer reads as truncated (MSG_TRUNC), not as data")
    func truncatedRead() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        let socket = try NetlinkSocket(namespacePath: lab.innerPath, groups: 0)
        defer { socket.close() }
        try socket.send(type: Int(RTM_GETLINK), flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: socket.nextSequence(), payload: familyHeader(size: MemoryLayout<ifinfomsg>.size, family: AF_UNSPEC))
        // A link message alone is over a kilobyte (statistics, names, queues).
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        #expect(try socket.receive(into: buffer, capacity: 64, timeout: 60_000) == .truncated)
    }

    @Test("a truncated notification makes the monitor resynchronize, and the state ends right")
    func truncatedEventResyncs() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        // 512 bytes hold an address notification but not a link notification.
        let monitor = try NetlinkMonitor(namespacePath: lab.innerPath, receiveBufferSize: 4 << 20, eventBufferSize: 512)
        defer { monitor.stop() }
        #expect(monitor.status == .online(interface: lab.innerLink, family: .ipv4))
        #expect(monitor.resynchronizations == 0)

        try await lab.inInner("link", "set", lab.innerLink, "down")
        #expect(await waitForStatus(monitor, .offline(.noLink)))
        #expect(monitor.resynchronizations > 0, "the link notification cannot fit in 512 bytes")
        #expect(monitor.routingState.links.values.contains { $0.name == lab.innerLink && !$0.isUp })
    }

    /// Polls the monitor's published state until it holds `bytes` as an address (a hang guard).
    private func waitForAddress(_ bytes: [UInt8], in monitor: NetlinkMonitor) async -> Bool {
        await eventually { monitor.routingState.addresses.keys.contains(where: { $0.bytes == bytes }) }
    }
}

/// A NETLINK_ROUTE socket of this process that sends crafted datagrams to another socket's port
/// id, as any local process with CAP_NET_ADMIN could.
private struct Forger {
    let descriptor: Int32

    init(namespacePath: String) throws {
        var error: Int32 = 0
        descriptor = namespacePath.withCString { cnl_socket_in_netns($0, AF_NETLINK, Int32(SOCK_RAW.rawValue), NETLINK_ROUTE, &error) }
        guard descriptor >= 0 else { throw LabError("netlink socket: errno \(error)") }
    }

    func send(_ datagram: [UInt8], to target: NetlinkSocket) throws {
        var own = sockaddr_nl()
        var size = socklen_t(MemoryLayout<sockaddr_nl>.size)
        let named = withUnsafeMutablePointer(to: &own) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(target.descriptor, $0, &size) } }
        guard named == 0 else { throw LabError("getsockname: errno \(errno)") }
        var destination = sockaddr_nl()
        destination.nl_family = sa_family_t(AF_NETLINK)
        destination.nl_pid = own.nl_pid
        let sent = datagram.withUnsafeBytes { raw in
            withUnsafePointer(to: &destination) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }
        guard sent == datagram.count else { throw LabError("sendto(netlink port \(own.nl_pid)): errno \(errno)") }
    }

    func close() { _ = Glibc.close(descriptor) }
}
#endif
