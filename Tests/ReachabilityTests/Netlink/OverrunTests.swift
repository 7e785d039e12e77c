#if os(Linux)
@testable import Reachability
import TestSupport
import Testing

/// ENOBUFS: when the kernel overruns the socket, the monitor re-reads everything.
@Suite("NetlinkMonitor overruns", .serialized)
struct OverrunTests {
    @Test("a burst that overflows a tiny receive buffer triggers a fresh dump, and the state ends right")
    func burstOverflows() async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        // The kernel rounds a tiny buffer up to its minimum (a few KB): a few dozen messages.
        let monitor = try NetlinkMonitor(namespacePath: lab.innerPath, receiveBufferSize: 1)
        defer { monitor.stop() }

        let count = 400
        let commands = (0..<count).map { "addr add 10.78.\($0 / 200).\($0 % 200 + 1)/32 dev \(lab.innerLink)" }
        // Holding the request socket stalls the event thread at its first address removal (it
        // re-reads routes then), so the burst behind it is sure to overflow the buffer.
        // The socket is held on a thread of its own, so the waits for `ip` block no thread of
        // the cooperative pool.
        let failure: String? = await onOwnThread {
            var failure: String?
            do {
                try monitor.withRequestSocket { _ in
                    do {
                        try NetworkLab.ipOnThisThread(["-n", lab.inner, "-6", "addr", "del", "\(NetworkLab.innerAddress6)/64", "dev", lab.innerLink])
                        try NetworkLab.ipOnThisThread(["-n", lab.inner, "-batch", "-"], input: commands.joined(separator: "\n") + "\n")
                    } catch {
                        failure = "\(error)"
                    }
                }
            } catch {
                failure = "\(error)"
            }
            return failure
        }
        if let failure { Issue.record("ip failed: \(failure)"); return }
        try await lab.inInner("route", "del", "default")
        #expect(await waitForStatus(monitor, .offline(.noDefaultRoute)))

        var addresses = 0
        _ = await eventually {
            addresses = monitor.routingState.addresses.keys.count { $0.family == .ipv4 && $0.bytes.first == 10 }
            return addresses == count + 1
        }
        #expect(monitor.resynchronizations > 0, "the burst should have overrun a minimal buffer")
        #expect(addresses == count + 1, "every address must be known after the resync")
    }
}
#endif
