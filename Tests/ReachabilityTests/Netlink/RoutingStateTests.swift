@testable import Reachability
import Testing

/// The status rules, without a kernel.
@Suite("RoutingState")
struct RoutingStateTests {
    private let usableFlags: UInt32 = 0x1 | 0x40 | 0x10000

    private func link(_ index: Int32, _ name: String, flags: UInt32, carrier: Bool = true) -> RoutingState.Event {
        .link(RoutingState.Link(index: index, name: name, flags: flags, carrier: carrier))
    }

    private func address(_ index: Int32, _ family: AddressFamily = .ipv4, scope: UInt8 = 0, flags: UInt32 = 0) -> RoutingState.Event {
        .address(RoutingState.Address(interfaceIndex: index, family: family, bytes: family == .ipv4 ? [10, 0, 0, 1] : Array(repeating: 1, count: 16), prefixLength: 24), RoutingState.AddressDetails(scope: scope, flags: flags))
    }

    private func route(_ index: Int32, _ family: AddressFamily = .ipv4, priority: UInt32 = 0) -> RoutingState.DefaultRoute {
        RoutingState.DefaultRoute(family: family, interfaceIndex: index, gateway: [10, 0, 0, 2], priority: priority)
    }

    @Test("nothing at all is noLink; loopback alone does not count")
    func empty() {
        var state = RoutingState()
        #expect(state.status == .offline(.noLink))
        state.apply(link(1, "lo", flags: usableFlags | 0x8))
        #expect(state.status == .offline(.noLink))
    }

    @Test("reasons follow the layers: link, carrier, address, default route")
    func layers() {
        var state = RoutingState()
        state.apply(link(2, "eth0", flags: 0))
        #expect(state.status == .offline(.noLink))
        state.apply(link(2, "eth0", flags: 0x1, carrier: false))
        #expect(state.status == .offline(.noCarrier))
        state.apply(link(2, "eth0", flags: usableFlags))
        #expect(state.status == .offline(.noAddress))
        state.apply(address(2))
        #expect(state.status == .offline(.noDefaultRoute))
        state.apply(.defaultRoutes([route(2)], replacing: false))
        #expect(state.status == .online(interface: "eth0", family: .ipv4))
        state.apply(.defaultRoutesRemoved([route(2)]))
        #expect(state.status == .offline(.noDefaultRoute))
    }

    @Test("an address must match the route's family, be global and not tentative")
    func addressRules() {
        var state = RoutingState()
        state.apply(link(2, "eth0", flags: usableFlags))
        state.apply(.defaultRoutes([route(2, .ipv6, priority: 1024)], replacing: false))
        state.apply(address(2, .ipv4))
        #expect(state.status == .offline(.noAddress))
        state.apply(address(2, .ipv6, scope: 253))
        #expect(state.status == .offline(.noAddress))
        state.apply(address(2, .ipv6, flags: 0x40))
        #expect(state.status == .offline(.noAddress))
        state.apply(address(2, .ipv6))
        #expect(state.status == .online(interface: "eth0", family: .ipv6))
    }

    @Test("the lowest metric that works wins; a removed link takes its routes and addresses along")
    func severalRoutes() {
        var state = RoutingState()
        state.apply(link(2, "eth0", flags: usableFlags))
        state.apply(link(3, "wlan0", flags: usableFlags))
        state.apply(address(2))
        state.apply(address(3))
        state.apply(.defaultRoutes([route(2, priority: 100), route(3, priority: 600)], replacing: false))
        #expect(state.status == .online(interface: "eth0", family: .ipv4))
        state.apply(link(2, "eth0", flags: 0x1, carrier: false))
        #expect(state.status == .online(interface: "wlan0", family: .ipv4))
        state.apply(.linkRemoved(index: 3))
        #expect(state.status == .offline(.noCarrier))
        #expect(state.defaultRoutes.count == 1)
    }

    @Test("a replacing route drops the old one of the same family and metric")
    func replace() {
        var state = RoutingState()
        state.apply(.defaultRoutes([route(2)], replacing: false))
        state.apply(.defaultRoutes([route(3)], replacing: true))
        #expect(state.defaultRoutes == [route(3)])
    }

    @Test("carrier on a link just brought up counts as running before the kernel's link watcher catches up, except in dormant mode")
    func runningBeforeLinkWatch() {
        var state = RoutingState()
        state.apply(address(2))
        state.apply(.defaultRoutes([route(2)], replacing: false))
        let pending = RoutingState.Link(index: 2, name: "eth0", flags: 0x1 | 0x10000, carrier: true)
        state.apply(.link(pending))
        #expect(state.status == .online(interface: "eth0", family: .ipv4))
        var dormant = pending
        dormant.linkMode = 1
        state.apply(.link(dormant))
        #expect(state.status == .offline(.noCarrier))
        dormant.operState = 5
        dormant.linkMode = 0
        state.apply(.link(dormant))
        #expect(state.status == .offline(.noCarrier))
        dormant.flags |= 0x40
        state.apply(.link(dormant))
        #expect(state.status == .online(interface: "eth0", family: .ipv4))
    }
}
