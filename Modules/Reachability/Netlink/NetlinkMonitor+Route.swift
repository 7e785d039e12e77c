import HTTPCore
#if os(Linux)
import CNetlink
import Glibc
#endif

extension NetlinkMonitor {
    /// Asks the kernel how a packet to `address` would leave (RTM_GETROUTE), in the monitor's
    /// namespace.
    ///
    /// Returns `nil` when there is no route (the kernel answers "network unreachable" or the
    /// route is unreachable, prohibited or a black hole). A loopback or directly connected
    /// destination has a route without any default route.
    ///
    /// - Parameter address: an IPv4 or IPv6 address in text form (no host names).
    /// - Throws: ``ReachabilityError/invalidAddress(_:)`` for anything else.
    public func route(to address: String) async throws(ReachabilityError) -> RouteInfo? {
        #if os(Linux)
        guard let (family, bytes) = IPAddressText.parse(address) else { throw .invalidAddress(address) }
        let reply = try withRequestSocket { socket throws(ReachabilityError) in try Self.askRoute(socket, family: family, bytes: bytes) }
        guard let reply, let index = reply.interfaceIndex ?? reply.nextHops.first?.0 else { return nil }
        let link = routingState.links[index]
        let kind: RouteInfo.Kind = switch Int(reply.type) {
        case Int(RTN_LOCAL): .local
        case Int(RTN_UNICAST): .unicast
        default: .other
        }
        return RouteInfo(
            destination: address, family: family, kind: kind, interface: link?.name ?? "", interfaceIndex: index,
            gateway: reply.gateway.flatMap(IPAddressText.format), source: reply.preferredSource.flatMap(IPAddressText.format),
            interfaceIsUsable: link?.isUsable ?? false
        )
        #else
        throw .unsupportedPlatform
        #endif
    }

    /// Whether traffic to `host` can leave now.
    ///
    /// For an IP address (or `localhost`), the answer comes from ``route(to:)``, so it holds
    /// without a default route for loopback and directly connected hosts, and fails for hosts
    /// behind an interface without carrier. A host name would need DNS, which this does not
    /// do (it would touch the network): for names the answer is whether ``status`` is online.
    public func isReachable(host: String) async -> Bool {
        let literal = host == "localhost" ? "127.0.0.1" : host.trimmingBrackets
        #if os(Linux)
        guard IPAddressText.parse(literal) != nil else { return status.isOnline }
        #endif
        do { return try await route(to: literal)?.isReachable ?? false } catch { return false }
    }

    #if os(Linux)
    private static func askRoute(_ socket: NetlinkSocket, family: AddressFamily, bytes: [UInt8]) throws(ReachabilityError) -> RouteReply? {
        var payload = familyHeader(size: MemoryLayout<rtmsg>.size, family: family == .ipv4 ? AF_INET : AF_INET6)
        payload[1] = UInt8(bytes.count * 8)  // rtm_dst_len
        let attributeLength = Int(cnl_rta_length(UInt32(bytes.count)))
        payload += [UInt8(attributeLength & 0xFF), UInt8(attributeLength >> 8)]
        payload += withUnsafeBytes(of: UInt16(RTA_DST.rawValue)) { Array($0) }
        payload += bytes
        payload += [UInt8](repeating: 0, count: Int(cnl_rta_align(UInt32(attributeLength))) - attributeLength)
        let sequence = socket.nextSequence()
        try socket.send(type: Int(RTM_GETROUTE), flags: NLM_F_REQUEST, sequence: sequence, payload: payload)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            switch try socket.receive(into: buffer, capacity: 64 * 1024, timeout: 2000) {
            case .timedOut: throw .timedOut("RTM_GETROUTE")
            // A lost or cut reply to a one-route request cannot be asked for again by
            // sequence: read on, and the wait ends in the time-out above if it never comes.
            case .woken, .overrun, .truncated: continue
            case .data(let count):
                for message in NetlinkDecoder.decode(UnsafeRawBufferPointer(start: buffer, count: count)) {
                    switch message {
                    case .route(let reply, sequence): return reply
                    case .error(sequence, let code):
                        switch -code {
                        case ENETUNREACH, EHOSTUNREACH, EACCES, EPERM, EINVAL: return nil
                        default: throw .kernel(request: "RTM_GETROUTE", errno: -code)
                        }
                    default: continue
                    }
                }
            }
        }
    }
    #endif
}

extension String {
    /// The text without the brackets of an IPv6 literal in a URL authority (`[::1]`).
    fileprivate var trimmingBrackets: String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
