#if os(Linux)
import CNetlink
import Glibc

/// One netlink message whose `nlmsg_len` was checked against the datagram it came in: its
/// header fields and exactly the payload that length covers.
struct NetlinkFrame {
    var type: UInt16
    var flags: UInt16
    var sequence: UInt32
    /// The bytes after the 16-byte header, up to `nlmsg_len` (never past the datagram).
    var payload: UnsafeRawBufferPointer
}

/// Walks netlink messages, their fixed family headers and their attributes with every length
/// checked before anything is read (security issue 14).
///
/// The UAPI macros (`NLMSG_OK`, `RTA_OK`, `IFLA_RTA`...) trust the length fields once the first
/// check passes: `IFLA_RTA` reads an `ifinfomsg` whether or not `nlmsg_len` covers one, and an
/// attribute's payload is handed out whatever its size. Here every read goes through a bounded
/// `UnsafeRawBufferPointer` slice whose size was compared with what is about to be loaded, so a
/// lying length can only make a message be skipped, never make the parser read outside the
/// datagram or loop forever (each step advances by at least one aligned header).
enum NetlinkFraming {
    static let messageHeaderSize = MemoryLayout<nlmsghdr>.size
    static let attributeHeaderSize = MemoryLayout<rtattr>.size

    /// Rounds `length` up to netlink's 4-byte alignment (`NLMSG_ALIGN`, `RTA_ALIGN` and
    /// `RTNH_ALIGN` are all this).
    static func align(_ length: Int) -> Int { (length + 3) & ~3 }

    /// The messages of `datagram`, in order, and whether the walk reached its end.
    ///
    /// A message whose `nlmsg_len` is shorter than its header or runs past the datagram ends the
    /// walk (`intact` false): nothing after it can be located. Fewer than 16 bytes left over
    /// after the last message are padding, not an error.
    static func frames(in datagram: UnsafeRawBufferPointer) -> (frames: [NetlinkFrame], intact: Bool) {
        var frames: [NetlinkFrame] = []
        var offset = 0
        while datagram.count - offset >= messageHeaderSize {
            let header = datagram.loadUnaligned(fromByteOffset: offset, as: nlmsghdr.self)
            let length = Int(header.nlmsg_len)
            guard length >= messageHeaderSize, length <= datagram.count - offset else { return (frames, false) }
            let payload = UnsafeRawBufferPointer(rebasing: datagram[(offset + messageHeaderSize)..<(offset + length)])
            frames.append(NetlinkFrame(type: header.nlmsg_type, flags: header.nlmsg_flags, sequence: header.nlmsg_seq, payload: payload))
            // `length` ≥ 16, so the walk always moves on; the padding of the last message may be
            // missing, which simply ends the loop.
            offset += align(length)
        }
        return (frames, true)
    }

    /// The fixed header of type `Header` at the start of `payload` (`ifinfomsg`, `ifaddrmsg`,
    /// `rtmsg`, `nlmsgerr`) and the attribute area after it, or `nil` when `nlmsg_len` does not
    /// cover the header.
    static func fixedHeader<Header: BitwiseCopyable>(
        _: Header.Type, in payload: UnsafeRawBufferPointer
    ) -> (header: Header, attributes: UnsafeRawBufferPointer)? {
        let size = MemoryLayout<Header>.size
        guard payload.count >= size else { return nil }
        let header = payload.loadUnaligned(as: Header.self)
        let start = min(align(size), payload.count)
        return (header, UnsafeRawBufferPointer(rebasing: payload[start...]))
    }

    /// Calls `body` with the type (flag bits masked off) and payload of each attribute in
    /// `area`, in order. Returns `false`, having stopped, when an `rta_len` is shorter than the
    /// attribute header or runs past `area`; fewer than 4 bytes left at the end are padding.
    @discardableResult
    static func forEachAttribute(
        in area: UnsafeRawBufferPointer, _ body: (_ type: Int, _ payload: UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        var offset = 0
        while area.count - offset >= attributeHeaderSize {
            let attribute = area.loadUnaligned(fromByteOffset: offset, as: rtattr.self)
            let length = Int(attribute.rta_len)
            guard length >= attributeHeaderSize, length <= area.count - offset else { return false }
            // NLA_F_NESTED and NLA_F_NET_BYTEORDER ride in the top bits of the type.
            body(Int(attribute.rta_type & 0x3FFF), UnsafeRawBufferPointer(rebasing: area[(offset + attributeHeaderSize)..<(offset + length)]))
            offset += align(length)
        }
        return true
    }

    /// Calls `body` with the interface index and attribute area of each next hop of an
    /// `RTA_MULTIPATH` payload. Returns `false`, having stopped, when an `rtnh_len` is shorter
    /// than `rtnexthop` or runs past `area`.
    @discardableResult
    static func forEachNextHop(
        in area: UnsafeRawBufferPointer, _ body: (_ interfaceIndex: Int32, _ attributes: UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        let headerSize = MemoryLayout<rtnexthop>.size
        var offset = 0
        while area.count - offset >= headerSize {
            let hop = area.loadUnaligned(fromByteOffset: offset, as: rtnexthop.self)
            let length = Int(hop.rtnh_len)
            guard length >= headerSize, length <= area.count - offset else { return false }
            let attributesStart = offset + min(align(headerSize), length)
            body(hop.rtnh_ifindex, UnsafeRawBufferPointer(rebasing: area[attributesStart..<(offset + length)]))
            offset += align(length)
        }
        return true
    }
}

extension UnsafeRawBufferPointer {
    /// The fixed-width integer in these bytes, or `nil` unless there are exactly as many bytes as
    /// it has (`u8`, `u32` and `s32` attributes are sent at their exact size).
    func exactly<Value: FixedWidthInteger>(_: Value.Type) -> Value? {
        count == MemoryLayout<Value>.size ? loadUnaligned(as: Value.self) : nil
    }

    /// The bytes of an address of `family`, or `nil` unless there are exactly 4 (IPv4) or 16
    /// (IPv6) of them.
    func address(of family: AddressFamily) -> [UInt8]? {
        count == (family == .ipv4 ? 4 : 16) ? Array(self) : nil
    }
}
#endif
