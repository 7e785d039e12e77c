import CourierTesting
import TestSupport
import Foundation
import HTTPCore
import Reachability
import Testing

/// Per-destination reachability through RTM_GETROUTE in a namespace.
@Suite("NetlinkMonitor.route(to:) in network namespaces", .serialized)
struct RouteQueryTests {
    @Test("loopback and a directly connected host are reachable without a default route; others have no route")
    func withoutDefaultRoute() async throws {
        try await withMonitoredLab(defaultRoute: false) { lab, monitor in
            #expect(monitor.status == .offline(.noDefaultRoute))

            let loopback = try await monitor.route(to: "127.0.0.1")
            #expect(loopback?.kind == .local)
            #expect(loopback?.interface == "lo")
            #expect(await monitor.isReachable(host: "localhost"))

            let neighbour = try #require(try await monitor.route(to: NetworkLab.outerAddress))
            #expect(neighbour.kind == .unicast)
            #expect(neighbour.interface == lab.innerLink)
            #expect(neighbour.gateway == nil)
            #expect(neighbour.source == NetworkLab.innerAddress)
            #expect(neighbour.isReachable)
            #expect(await monitor.isReachable(host: NetworkLab.outerAddress6))
            #expect(await monitor.isReachable(host: "[\(NetworkLab.outerAddress6)]"))

            #expect(try await monitor.route(to: "192.0.2.1") == nil)
            #expect(await monitor.isReachable(host: "192.0.2.1") == false)
            // A name needs DNS; without a default route the answer is no.
            #expect(await monitor.isReachable(host: "example.com") == false)
        }
    }

    @Test("a remote host goes through the default route's gateway")
    func throughGateway() async throws {
        try await withMonitoredLab { lab, monitor in
            let route = try #require(try await monitor.route(to: "192.0.2.1"))
            #expect(route.gateway == NetworkLab.outerAddress)
            #expect(route.interface == lab.innerLink)
            #expect(route.isReachable)
        }
    }

    @Test("a host behind an interface without carrier, or a down interface, is not reachable")
    func behindDownInterface() async throws {
        try await withMonitoredLab { lab, monitor in
            try await lab.inOuter("link", "set", lab.outerLink, "down")
            #expect(await waitForStatus(monitor, .offline(.noCarrier)))
            // The kernel keeps the route, but the interface cannot carry it.
            let route = try await monitor.route(to: NetworkLab.outerAddress)
            #expect(route?.interface == lab.innerLink)
            #expect(route?.isReachable == false)
            #expect(await monitor.isReachable(host: NetworkLab.outerAddress) == false)

            try await lab.inInner("link", "set", lab.innerLink, "down")
            #expect(await waitForStatus(monitor, .offline(.noLink)))
            #expect(await monitor.isReachable(host: NetworkLab.outerAddress) == false)
            #expect(await monitor.isReachable(host: "127.0.0.1"))
        }
    }

    @Test("text that is not an address is an error")
    func invalidAddress() async throws {
        try await withMonitoredLab { lab, monitor in
            await #expect(throws: ReachabilityError.invalidAddress("not-an-ip")) {
                try await monitor.route(to: "not-an-ip")
            }
        }
    }

    @Test("the pre-flight plugin refuses calls while the namespace has no default route, and lets them through once it has")
    func pluginFollowsTheKernel() async throws {
        try await withMonitoredLab(defaultRoute: false) { lab, monitor in
            let transport = StubTransport(fallback: .status(204))
            var configuration = ClientConfiguration(baseURL: URL(string: "http://api.test")!)
            configuration.plugins = [ReachabilityPlugin(monitor: monitor)]
            let client = APIClient(configuration: configuration, transport: transport)
            await #expect(throws: NetworkError.self) { try await client.send(Request<Void>.get("/ping")) }
            #expect(transport.recordedRequests.isEmpty)

            try await lab.inInner("route", "add", "default", "via", NetworkLab.outerAddress)
            #expect(await waitForStatus(monitor, .online(interface: lab.innerLink, family: .ipv4)))
            try await client.send(Request<Void>.get("/ping"))
            #expect(transport.recordedRequests.count == 1)
        }
    }
}
