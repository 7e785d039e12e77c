#if os(Linux)
import TestSupport
import Foundation
import HTTPCore
import Reachability
import Testing

/// The probe for real: a Python HTTP server runs inside the lab's outer namespace (the
/// "internet", 10.77.0.2:8080), and the probe's TCP socket is created inside the inner
/// namespace (``NamespaceTransport``), so every probe crosses the veth link and the inner
/// namespace's routes, exactly what it is meant to check. A server on the inner namespace's
/// loopback would answer even with the link down, and one on the root loopback would bypass
/// the lab altogether.
@Suite("ProbeMonitor against a server in a network namespace", .serialized)
struct ProbeNamespaceTests {
    private func probe(_ path: String, lab: NetworkLab, upstream: (any NetworkMonitor)? = nil) -> ProbeMonitor {
        let url = URL(string: "http://\(NetworkLab.outerAddress):\(ProbeServer.port)\(path)")!
        // A probe's timeout the server in the namespace meets however loaded the machine is.
        let configuration = ProbeConfiguration(url: url, timeout: .seconds(60), interval: .seconds(300), backoff: Backoff(base: .seconds(60), jitter: false))
        return ProbeMonitor(configuration: configuration, transport: NamespaceTransport(namespacePath: lab.innerPath), upstream: upstream)
    }

    @Test("204 passes, a 302 to a login page and a 200 HTML page read as a captive portal")
    func answers() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        let server = try await ProbeServer.start(namespace: lab.outer, address: NetworkLab.outerAddress)
        defer { server.stop() }

        #expect(await probe("/generate_204", lab: lab).probe() == .passed)
        #expect(await probe("/portal", lab: lab).probe() == .captivePortal(status: 302))
        #expect(await probe("/page", lab: lab).probe() == .captivePortal(status: 200))
    }

    @Test("netlink AND probe: online with the interface; captive portal is limited; carrier lost is offline at once")
    func combined() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        let server = try await ProbeServer.start(namespace: lab.outer, address: NetworkLab.outerAddress)
        defer { server.stop() }
        let netlink = try NetlinkMonitor(namespacePath: lab.innerPath)
        defer { netlink.stop() }

        let good = probe("/generate_204", lab: lab, upstream: netlink)
        good.start()
        defer { good.stop() }
        let monitor = CombinedMonitor.all(of: [netlink, good])
        defer { monitor.stop() }
        #expect(await waitForStatus(monitor, .online(interface: lab.innerLink, family: .ipv4)))

        try await lab.inOuter("link", "set", lab.outerLink, "down")
        #expect(await waitForStatus(monitor, .offline(.noCarrier)))
        try await lab.inOuter("link", "set", lab.outerLink, "up")
        // The probe runs again as soon as netlink reports the change.
        #expect(await waitForStatus(monitor, .online(interface: lab.innerLink, family: .ipv4)))

        let portal = probe("/portal", lab: lab, upstream: netlink)
        portal.start()
        defer { portal.stop() }
        let captive = CombinedMonitor.all(of: [netlink, portal])
        defer { captive.stop() }
        #expect(await waitForStatus(captive, .limited(.captivePortal)))
    }

    @Test("a server that is gone fails the probe: limited(probeFailed) while netlink says online")
    func serverGone() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        let netlink = try NetlinkMonitor(namespacePath: lab.innerPath)
        defer { netlink.stop() }
        let monitor = probe("/generate_204", lab: lab, upstream: netlink)
        monitor.start()
        defer { monitor.stop() }
        #expect(await waitForStatus(monitor, .limited(.probeFailed)))
        #expect(netlink.status.isOnline)
    }
}
#endif
