#if os(Linux)
import CNetlink
import Foundation
import Glibc
import HTTPCore

/// The thread behind a ``NetlinkMonitor``: blocks in `poll` on the subscribed socket and on a
/// wake pipe, applies each batch of messages to its ``RoutingState`` and publishes the status.
///
/// Sendable: every stored property is a constant of a Sendable type; the routing state being
/// built lives on the event thread's stack, and only copies of it are shared, through `snapshot`.
final class NetlinkEventLoop: Sendable {
    /// Groups: links, IPv4 and IPv6 addresses, IPv4 and IPv6 routes.
    static let groups = UInt32(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE)
    static let bufferSize = 256 * 1024

    let socket: NetlinkSocket
    /// A second socket, without groups, for requests: route re-reads and RTM_GETROUTE queries.
    /// `nil` once the loop has stopped (and closed it).
    let requests: LockedBox<NetlinkSocket?>
    let broadcast: StatusBroadcast
    /// The latest routing state, for per-destination queries.
    let snapshot: LockedBox<RoutingState>
    /// Counts the fresh dumps taken after overruns, for tests and diagnostics.
    let resyncs = LockedBox(0)
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let stopped = LockedBox(false)

    /// Opens the socket, takes the first dump and starts the thread.
    init(namespacePath: String?, receiveBufferSize: Int) throws(ReachabilityError) {
        socket = try NetlinkSocket(namespacePath: namespacePath, groups: Self.groups, receiveBufferSize: receiveBufferSize)
        let requestSocket: NetlinkSocket
        do { requestSocket = try NetlinkSocket(namespacePath: namespacePath, groups: 0) } catch {
            socket.close()
            throw error
        }
        requests = LockedBox(Optional(requestSocket))
        // Subscribed first, dumped second: a change during the dump is queued on `socket` and
        // applied after it, so nothing falls between the two.
        let initial: RoutingState
        do { initial = try Self.dump(requestSocket) } catch {
            socket.close()
            requestSocket.close()
            throw error
        }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            socket.close()
            requestSocket.close()
            throw .system(call: "pipe", errno: errno)
        }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        wakeRead = pipeEnds[0]
        wakeWrite = pipeEnds[1]
        snapshot = LockedBox(initial)
        broadcast = StatusBroadcast(initial.status)
        let thread = Thread { [self] in run(initial) }
        thread.name = "courier.netlink"
        thread.start()
    }

    /// Asks the thread to stop; it closes the socket and ends every stream. Idempotent.
    func stop() {
        stopped.withLock { stopped in
            guard !stopped else { return }
            stopped = true
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    private func run(_ initial: RoutingState) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.bufferSize, alignment: 8)
        var state = initial
        defer {
            buffer.deallocate()
            socket.close()
            requests.withLock { socket in
                socket?.close()
                socket = nil
            }
            stopped.withLock { stopped in
                stopped = true
                Glibc.close(wakeWrite)
                Glibc.close(wakeRead)
            }
            broadcast.finish()
        }
        do {
            receiving: while true {
                var overrun = false
                var refreshRoutes = false
                switch try socket.receive(into: buffer, capacity: Self.bufferSize, timeout: -1, wake: wakeRead) {
                case .woken:
                    break receiving
                case .timedOut:
                    continue
                case .overrun:
                    overrun = true
                case .data(let count):
                    for message in NetlinkDecoder.decode(buffer, length: count) {
                        switch message {
                        case .event(let event):
                            state.apply(event)
                            refreshRoutes = refreshRoutes || RoutingState.mayFlushRoutesSilently(event)
                        case .overrun: overrun = true
                        default: break
                        }
                    }
                }
                if overrun {
                    // The kernel dropped events: what we hold may be wrong. Discard what is
                    // queued (it predates the dump) and start again from a full dump, taken on
                    // the request socket, which no multicast traffic can overrun.
                    try socket.drain(into: buffer, capacity: Self.bufferSize)
                    state = try dumpOnRequestSocket(DumpKind.allCases)
                    resyncs.withLock { $0 += 1 }
                } else if refreshRoutes {
                    state.replaceDefaultRoutes(with: try dumpOnRequestSocket([.routes]).defaultRoutes)
                }
                snapshot.withLock { $0 = state }
                broadcast.publish(state.status)
            }
        } catch {
            // The socket failed (it cannot, short of the namespace vanishing); the last status
            // stands and every stream ends.
        }
    }

    /// A dump of `kinds` on the request socket, which no multicast traffic can overrun.
    private func dumpOnRequestSocket(_ kinds: [DumpKind]) throws(ReachabilityError) -> RoutingState {
        try requests.withLock { socket in
            Result { () throws(ReachabilityError) in
                guard let socket else { throw .stopped }
                return try Self.dump(socket, kinds: kinds)
            }
        }.get()
    }

    /// What a dump lists.
    enum DumpKind: CaseIterable {
        case links, addresses, routes

        var request: (type: Int, size: Int, name: String) {
            switch self {
            case .links: (Int(RTM_GETLINK), MemoryLayout<ifinfomsg>.size, "RTM_GETLINK")
            case .addresses: (Int(RTM_GETADDR), MemoryLayout<ifaddrmsg>.size, "RTM_GETADDR")
            case .routes: (Int(RTM_GETROUTE), MemoryLayout<rtmsg>.size, "RTM_GETROUTE")
            }
        }
    }

    /// Dumps links, then addresses, then routes (or the `kinds` asked for) into a fresh state,
    /// on a socket without multicast groups. Restarts from scratch after an overrun.
    static func dump(_ socket: NetlinkSocket, kinds: [DumpKind] = DumpKind.allCases) throws(ReachabilityError) -> RoutingState {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        attempts: for _ in 0..<5 {
            var state = RoutingState()
            for request in kinds.map(\.request) {
                let sequence = socket.nextSequence()
                try socket.send(type: request.type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, payload: familyHeader(size: request.size, family: AF_UNSPEC))
                reading: while true {
                    switch try socket.receive(into: buffer, capacity: bufferSize, timeout: 2000) {
                    case .woken: continue
                    case .timedOut: throw .timedOut(request.name)
                    case .overrun: continue attempts
                    case .data(let count):
                        for message in NetlinkDecoder.decode(buffer, length: count) {
                            switch message {
                            case .event(let event): state.apply(event)
                            case .done(sequence): break reading
                            case .error(sequence, let code) where code != 0: throw .kernel(request: request.name, errno: -code)
                            case .overrun: continue attempts
                            default: break
                            }
                        }
                    }
                }
            }
            return state
        }
        throw .timedOut("a consistent dump (the kernel kept overrunning the socket)")
    }
}
#endif
