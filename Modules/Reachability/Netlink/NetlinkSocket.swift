#if os(Linux)
import CNetlink
import Glibc
import HTTPCore

/// A NETLINK_ROUTE socket, opened in the caller's network namespace or in another one.
///
/// Sendable: the descriptor is immutable and the sequence counter sits behind a lock. Reads are
/// done by one thread at a time (the monitor's event thread, or a request under a lock).
final class NetlinkSocket: Sendable {
    /// What one ``receive(into:capacity:timeout:wake:)`` produced.
    enum Received: Equatable {
        /// A whole datagram of this many bytes from the kernel.
        case data(Int)
        case woken
        /// ENOBUFS: the kernel dropped messages because the receive buffer was full.
        case overrun
        /// A datagram from the kernel longer than the buffer: its tail is lost (MSG_TRUNC).
        case truncated
        case timedOut
    }

    let descriptor: Int32
    private let sequence = LockedBox<UInt32>(0)
    /// Counts datagrams dropped because they did not come from the kernel, for tests and
    /// diagnostics.
    let foreignDatagrams = LockedBox(0)

    /// Opens a socket subscribed to `groups` (`RTMGRP_*` bits; 0 for a request-only socket)
    /// in the namespace at `namespacePath`, or in the caller's when `nil`.
    init(namespacePath: String?, groups: UInt32, receiveBufferSize: Int = 4 << 20) throws(ReachabilityError) {
        let size = Int32(receiveBufferSize)
        var error: Int32 = 0
        let descriptor: Int32
        if let namespacePath {
            descriptor = namespacePath.withCString { cnl_open_route_socket($0, groups, size, &error) }
            if descriptor < 0 {
                if error == ENOENT || error == EPERM || error == EINVAL || error == EBADF {
                    throw .namespace(path: namespacePath, errno: error)
                }
                throw .system(call: "socket(NETLINK_ROUTE) in \(namespacePath)", errno: error)
            }
        } else {
            descriptor = cnl_open_route_socket(nil, groups, size, &error)
            if descriptor < 0 { throw .system(call: "socket(NETLINK_ROUTE)", errno: error) }
        }
        self.descriptor = descriptor
    }

    /// A fresh sequence number for a request.
    func nextSequence() -> UInt32 {
        sequence.withLock { value in
            value &+= 1
            return value
        }
    }

    /// Sends one request of `type` with `flags` and `payload` (the family header and attributes).
    func send(type: Int, flags: Int32, sequence: UInt32, payload: [UInt8]) throws(ReachabilityError) {
        let length = Int(cnl_nlmsg_length(UInt32(payload.count)))
        var message = [UInt8](repeating: 0, count: Int(cnl_nlmsg_align(UInt32(length))))
        message.withUnsafeMutableBytes { raw in
            var header = nlmsghdr()
            header.nlmsg_len = UInt32(length)
            header.nlmsg_type = UInt16(type)
            header.nlmsg_flags = UInt16(flags)
            header.nlmsg_seq = sequence
            raw.storeBytes(of: header, as: nlmsghdr.self)
            payload.withUnsafeBytes { source in
                (raw.baseAddress! + Int(cnl_nlmsg_hdrlen())).copyMemory(from: source.baseAddress!, byteCount: source.count)
            }
        }
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(AF_NETLINK)
        let sent = message.withUnsafeBytes { raw in
            withUnsafePointer(to: &kernel) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }
        if sent < 0 { throw .system(call: "sendto(netlink)", errno: errno) }
    }

    /// Waits up to `timeout` milliseconds (-1: forever) for a datagram or for `wake` to become
    /// readable, and reads the datagram into `buffer`.
    ///
    /// Datagrams from anyone but the kernel are dropped (counted in ``foreignDatagrams``) and
    /// the wait goes on.
    func receive(into buffer: UnsafeMutableRawPointer, capacity: Int, timeout: Int32, wake: Int32? = nil) throws(ReachabilityError) -> Received {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        if let wake { descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .system(call: "poll", errno: errno)
            }
            if ready == 0 { return .timedOut }
            if descriptors.count > 1, descriptors[1].revents != 0 { return .woken }
            var sender = sockaddr_nl()
            var flags: Int32 = 0
            let count = receiveDatagram(into: buffer, capacity: capacity, sender: &sender, flags: &flags)
            if count < 0 {
                switch errno {
                case ENOBUFS: return .overrun
                case EAGAIN, EINTR: continue
                default: throw .system(call: "recvmsg(netlink)", errno: errno)
                }
            }
            // Any local process with CAP_NET_ADMIN (or any at all, on some protocols) can unicast
            // to our port id; only the kernel (port 0) speaks for the routing tables.
            guard sender.nl_family == sa_family_t(AF_NETLINK), sender.nl_pid == 0 else {
                foreignDatagrams.withLock { $0 += 1 }
                continue
            }
            // With MSG_TRUNC in the flags the kernel returns the datagram's real length, so a
            // datagram longer than the buffer shows as a count past capacity.
            if count > capacity || flags & Int32(MSG_TRUNC) != 0 { return .truncated }
            return .data(count)
        }
    }

    /// One `recvmsg` that records the sender's address and the message flags; returns what
    /// `recvmsg` returns (the datagram's full length, thanks to MSG_TRUNC).
    private func receiveDatagram(
        into buffer: UnsafeMutableRawPointer, capacity: Int, sender: inout sockaddr_nl, flags: inout Int32
    ) -> Int {
        var vector = iovec(iov_base: buffer, iov_len: capacity)
        return withUnsafeMutablePointer(to: &vector) { vector in
            withUnsafeMutablePointer(to: &sender) { sender in
                var header = msghdr()
                header.msg_name = UnsafeMutableRawPointer(sender)
                header.msg_namelen = socklen_t(MemoryLayout<sockaddr_nl>.size)
                header.msg_iov = vector
                header.msg_iovlen = 1
                let count = recvmsg(descriptor, &header, Int32(MSG_DONTWAIT | MSG_TRUNC))
                // A sender address shorter than sockaddr_nl is not the kernel's.
                if header.msg_namelen < socklen_t(MemoryLayout<sockaddr_nl>.size) { sender.pointee.nl_family = 0 }
                flags = header.msg_flags
                return count
            }
        }
    }

    /// Reads and discards everything queued, up to the point the queue is empty.
    func drain(into buffer: UnsafeMutableRawPointer, capacity: Int) throws(ReachabilityError) {
        while true {
            switch try receive(into: buffer, capacity: capacity, timeout: 0) {
            case .timedOut: return
            case .data, .overrun, .truncated, .woken: continue
            }
        }
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}

/// A zeroed family header of `size` bytes whose first byte (the family field of `ifinfomsg`,
/// `ifaddrmsg` and `rtmsg` alike) is `family`.
func familyHeader(size: Int, family: Int32) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: size)
    bytes[0] = UInt8(family)
    return bytes
}
#endif
