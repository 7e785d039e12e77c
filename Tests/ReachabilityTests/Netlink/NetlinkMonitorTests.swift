import TestSupport
import Reachability
import Testing
import Foundation

/// The netlink monitor against a real kernel: each test builds its own pair of namespaces
/// (``NetworkLab``), watches the inner one from this process through the namespace-path
/// option, and drives transitions with `ip`.
@Suite("NetlinkMonitor in network namespaces", .serialized)
struct NetlinkMonitorTests {
    @Test("the initial dump sees the default route: online through the veth, IPv4")
    func initialDump() async throws {
        try await withMonitoredLab { lab, monitor in
            #expect(monitor.status == .online(interface: lab.innerLink, family: .ipv4))
        }
    }

    @Test("link down goes offline(noLink); link up without the flushed route is noDefaultRoute; the route brings it online")
    func linkDownAndUp() async throws {
        try await withMonitoredLab { lab, monitor in
            let recorder = StatusRecorder(monitor)

            try await lab.inInner("link", "set", lab.innerLink, "down")
            #expect(await waitForStatus(monitor, .offline(.noLink)))

            // The kernel flushes IPv4 routes of a link that goes down, so up alone is not enough.
            try await lab.inInner("link", "set", lab.innerLink, "up")
            #expect(await waitForStatus(monitor, .offline(.noDefaultRoute)), "status: \(monitor.status)")

            try await lab.inInner("route", "add", "default", "via", NetworkLab.outerAddress)
            #expect(await waitForStatus(monitor, .online(interface: lab.innerLink, family: .ipv4)))

            monitor.stop()
            let seen = await recorder.finish()
            #expect(seen.first == .online(interface: lab.innerLink, family: .ipv4))
            #expect(seen.last == .online(interface: lab.innerLink, family: .ipv4))
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 != $1 }, "identical consecutive states must not be re-emitted: \(seen)")
        }
    }

    @Test("carrier lost on the peer side goes offline(noCarrier) with the route kept; the peer back up is online again")
    func carrierLost() async throws {
        try await withMonitoredLab { lab, monitor in
            try await lab.inOuter("link", "set", lab.outerLink, "down")
            #expect(await waitForStatus(monitor, .offline(.noCarrier)))
            try await lab.inOuter("link", "set", lab.outerLink, "up")
            #expect(await waitForStatus(monitor, .online(interface: lab.innerLink, family: .ipv4)))
        }
    }

    @Test("removing the IPv4 address goes offline(noAddress)")
    func addressRemoved() async throws {
        try await withMonitoredLab { lab, monitor in
            // The IPv6 address is global too, so remove it first: that alone changes nothing.
            try await lab.inInner("-6", "addr", "del", "\(NetworkLab.innerAddress6)/64", "dev", lab.innerLink)
            try await lab.inInner("addr", "del", "\(NetworkLab.innerAddress)/24", "dev", lab.innerLink)
            #expect(await waitForStatus(monitor, .offline(.noAddress)))
        }
    }

    @Test("deleting the default route goes offline(noDefaultRoute); adding it back is online")
    func defaultRouteDeletedAndAdded() async throws {
        try await withMonitoredLab { lab, monitor in
            try await lab.inInner("route", "del", "default")
            #expect(await waitForStatus(monitor, .offline(.noDefaultRoute)))
            try await lab.inInner("route", "add", "default", "via", NetworkLab.outerAddress)
            #expect(await waitForStatus(monitor, .online(interface: lab.innerLink, family: .ipv4)))
        }
    }

    @Test("an IPv6-only default route is online with family ipv6")
    func ipv6OnlyDefaultRoute() async throws {
        try await withMonitoredLab(defaultRoute: false) { lab, monitor in
            #expect(monitor.status == .offline(.noDefaultRoute))

            try await lab.inInner("-6", "route", "add", "default", "via", NetworkLab.outerAddress6, "dev", lab.innerLink)
            #expect(await waitForStatus(monitor, .online(interface: lab.innerLink, family: .ipv6)))
            try await lab.inInner("-6", "route", "del", "default")
            #expect(await waitForStatus(monitor, .offline(.noDefaultRoute)))
        }
    }

    @Test("stop closes the socket and ends every stream")
    func stopEndsStreams() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        let monitor = try NetlinkMonitor(namespacePath: lab.innerPath)
        let recorder = StatusRecorder(monitor)
        monitor.stop()
        let ended = await recorder.ends()
        #expect(ended, "the status stream did not end within 5 s of stop()")
        // A stream asked for after the stop yields the last status and ends at once.
        var count = 0
        for await _ in monitor.statusUpdates() { count += 1 }
        #expect(count == 1)
    }

    @Test("a namespace that does not exist is a clear error")
    func missingNamespace() {
        let error = #expect(throws: ReachabilityError.self) {
            try NetlinkMonitor(namespacePath: "/var/run/netns/courier-rt-does-not-exist")
        }
        #expect(error?.kind == .namespace)
        #expect(error?.subject == "/var/run/netns/courier-rt-does-not-exist" && error?.errno == ENOENT)
        #expect(error?.description == "cannot use network namespace /var/run/netns/courier-rt-does-not-exist: No such file or directory (errno 2)")
        do {
            _ = try NetlinkMonitor(namespacePath: "/var/run/netns/courier-rt-does-not-exist")
        } catch ReachabilityError.Kind.namespace {
            // a kind matches in catch
        } catch {
            Issue.record("\(error)")
        }
    }
}
