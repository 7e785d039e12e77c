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
    /// Large enough for any datagram the kernel sends (it sizes dump chunks and notifications
    /// well below this), so MSG_TRUNC stays a defence rather than a habit.
    static let bufferSize = 256 * 1024

    let socket: NetlinkSocket
    /// A second socket, without groups, for requests: route re-reads and RTM_GETROUTE queries.
    /// `nil` once the loop has stopped (and closed it).
    let requests: LockedBox<NetlinkSocket?>
    let broadcast: StatusBroadcast
    /// The latest routing state, for per-destination queries.
    let snapshot: LockedBox<RoutingState>
    /// Counts the fresh dumps taken after overruns, truncated datagrams and malformed messages,
    /// for tests and diagnostics.
    let resyncs = LockedBox(0)
    /// The size of the buffer the event thread reads notifications into; tests shrink it to
    /// provoke truncated datagrams (MSG_TRUNC).
    private let eventBufferSize: Int
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let stopped = LockedBox(false)

    /// Opens the socket, takes the first dump and starts the thread.
    init(namespacePath: String?, receiveBufferSize: Int, eventBufferSize: Int = bufferSize) throws(ReachabilityError) {
        self.eventBufferSize = eventBufferSize
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
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: eventBufferSize, alignment: 8)
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
                switch try socket.receive(into: buffer, capacity: eventBufferSize, timeout: -1, wake: wakeRead) {
                case .woken:
                    break receiving
                case .timedOut:
                    continue
                case .overrun, .truncated:
                    // Dropped events (ENOBUFS) and a datagram cut short (MSG_TRUNC) both lose
                    // changes we will never hear of again.
                    overrun = true
                case .data(let count):
                    for message in NetlinkDecoder.decode(UnsafeRawBufferPointer(start: buffer, count: count)) {
                        switch message {
                        case .event(let event, _):
                            state.apply(event)
                            refreshRoutes = refreshRoutes || RoutingState.mayFlushRoutesSilently(event)
                        // A malformed message may have been a change we could not apply.
                        case .overrun, .malformed: overrun = true
                        default: break
                        }
                    }
                }
                if overrun {
                    // Events were lost or unreadable: what we hold may be wrong. Discard what is
                    // queued (it predates the dump) and start again from a full dump, taken on
                    // the request socket, which no multicast traffic can overrun.
                    try socket.drain(into: buffer, capacity: eventBufferSize)
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
    /// on a socket without multicast groups. Starts again from scratch, up to five times in all,
    /// when a dump could not be trusted (see ``DumpProgress``).
    static func dump(_ socket: NetlinkSocket, kinds: [DumpKind] = DumpKind.allCases) throws(ReachabilityError) -> RoutingState {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        attempts: for _ in 0..<5 {
            var state = RoutingState()
            for request in kinds.map(\.request) {
                let sequence = socket.nextSequence()
                try socket.send(type: request.type, flags: NLM_F_REQUEST | NLM_F_DUMP, sequence: sequence, payload: familyHeader(size: request.size, family: AF_UNSPEC))
                var progress = DumpProgress(sequence: sequence)
                reading: while true {
                    switch try socket.receive(into: buffer, capacity: bufferSize, timeout: 2000) {
                    case .woken: continue
                    case .timedOut:
                        if progress.mustRestart { continue attempts }
                        throw .timedOut(request.name)
                    case .overrun, .truncated: progress.lostReplies()
                    case .data(let count):
                        for message in NetlinkDecoder.decode(UnsafeRawBufferPointer(start: buffer, count: count)) {
                            switch progress.read(message, into: &state) {
                            case .more: continue
                            case .finished: break reading
                            case .restart: continue attempts
                            case .failed(let errno): throw .kernel(request: request.name, errno: errno)
                            }
                        }
                    }
                }
            }
            return state
        }
        throw .timedOut("a consistent dump (five in a row were interrupted, overrun, truncated or malformed)")
    }
}
#endif
