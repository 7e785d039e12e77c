import CourierTesting
import Foundation
import HTTPCore
import Reachability
import Testing

/// ``CombinedMonitor``, ``ManualMonitor`` and ``ReachabilityPlugin``.
@Suite("Composition and pre-flight")
struct CompositionTests {
    @Test("all(of:): any offline wins, then any limited, else the first online")
    func combinationRule() async {
        let route = ManualMonitor(.online(interface: "eth0", family: .ipv4))
        let probe = ManualMonitor(.limited(.unprobed))
        let monitor = CombinedMonitor.all(of: [route, probe])
        defer { monitor.stop() }
        #expect(monitor.status == .limited(.unprobed))
        probe.status = .online(interface: "", family: .ipv4)
        #expect(await waitForStatus(monitor, .online(interface: "eth0", family: .ipv4)))
        route.status = .offline(.noCarrier)
        #expect(await waitForStatus(monitor, .offline(.noCarrier)))
        probe.status = .limited(.captivePortal)
        route.status = .online(interface: "wlan0", family: .ipv6)
        #expect(await waitForStatus(monitor, .limited(.captivePortal)))
    }

    @Test("a manual monitor does not re-emit an identical status, and stop ends its streams")
    func manualDeduplicates() async {
        let monitor = ManualMonitor(.offline(.noLink))
        let recorder = StatusRecorder(monitor)
        monitor.status = .offline(.noLink)
        monitor.status = .online(interface: "eth0", family: .ipv4)
        monitor.status = .online(interface: "eth0", family: .ipv4)
        monitor.status = .offline(.noDefaultRoute)
        monitor.stop()
        #expect(await recorder.finish() == [.offline(.noLink), .online(interface: "eth0", family: .ipv4), .offline(.noDefaultRoute)])
    }

    @Test("the plugin fails a call with .offline before anything is sent, and lets it through when online")
    func plugin() async throws {
        let transport = StubTransport(fallback: .status(204))
        let monitor = ManualMonitor(.offline(.noDefaultRoute))
        var configuration = ClientConfiguration(baseURL: URL(string: "http://api.test")!)
        configuration.plugins = [ReachabilityPlugin(monitor: monitor)]
        let client = APIClient(configuration: configuration, transport: transport)

        await #expect {
            try await client.send(Request<Void>.get("/ping"))
        } throws: { error in
            guard let error = error as? NetworkError, case .offline = error else { return false }
            return true
        }
        #expect(transport.recordedRequests.isEmpty)

        monitor.status = .limited(.captivePortal)
        try await client.send(Request<Void>.get("/ping"))
        #expect(transport.recordedRequests.count == 1)

        configuration.plugins = [ReachabilityPlugin(monitor: monitor, rejectWhenLimited: true)]
        let strict = APIClient(configuration: configuration, transport: transport)
        await #expect(throws: NetworkError.self) { try await strict.send(Request<Void>.get("/ping")) }
        #expect(transport.recordedRequests.count == 1)
    }
}
