import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Reachability
import Testing
import TestSupport

/// A sleep the test controls: records each requested delay, returns at once for the first
/// `free` calls, then blocks until cancelled, so a monitor's schedule runs without real waiting.
final class ScriptedSleep: Sendable {
    private let state: LockedBox<(free: Int, delays: [Duration])>

    init(free: Int) { state = LockedBox((free, [])) }

    var delays: [Duration] { state.current.delays }

    var sleep: ProbeMonitor.Sleep {
        { [state] duration in
            let free = state.withLock { state in
                state.delays.append(duration)
                return state.delays.count <= state.free
            }
            if free { return }
            try await Task.sleep(for: .seconds(3600))
        }
    }

    /// Waits (a hang guard) until at least `count` delays were requested.
    func waitForDelays(_ count: Int) async -> Bool {
        await eventually { delays.count >= count }
    }
}

/// The probe's schedule, backoff and reaction to its upstream monitor, with injected sleep.
@Suite("ProbeMonitor schedule")
struct ProbeScheduleTests {
    private let url = URL(string: "http://probe.test/generate_204")!

    private func configuration() -> ProbeConfiguration {
        ProbeConfiguration(url: url, interval: .seconds(300), backoff: Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(8), jitter: false))
    }

    @Test("while limited it backs off 1, 2, 4, 8, 8 s; once passing it waits the interval")
    func backoff() async {
        let transport = StubTransport()
        transport.on(.get, "/generate_204", respond: .status(200), .status(200), .status(200), .status(200), .status(200), .status(204))
        let sleep = ScriptedSleep(free: 5)
        let monitor = ProbeMonitor(configuration: configuration(), transport: transport, sleep: sleep.sleep)
        monitor.start()
        defer { monitor.stop() }
        #expect(await sleep.waitForDelays(6))
        #expect(sleep.delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(300)])
        #expect(monitor.status == .online(interface: "", family: .ipv4))
        #expect(transport.recordedRequests.count == 6)
    }

    @Test("a change upstream probes at once, without waiting out the schedule")
    func upstreamTriggers() async {
        let transport = StubTransport()
        transport.on(.get, "/generate_204", respond: .status(302), .status(204))
        let upstream = ManualMonitor(.online(interface: "eth0", family: .ipv4))
        let sleep = ScriptedSleep(free: 0)
        let monitor = ProbeMonitor(configuration: configuration(), transport: transport, upstream: upstream, sleep: sleep.sleep)
        monitor.start()
        defer { monitor.stop() }
        #expect(await waitForStatus(monitor, .limited(.captivePortal)))
        // The next scheduled probe is an hour away (the scripted sleep blocks); the change must not wait.
        upstream.status = .online(interface: "wlan0", family: .ipv6)
        #expect(await waitForStatus(monitor, .online(interface: "wlan0", family: .ipv6)))
        #expect(transport.recordedRequests.count == 2)
    }

    @Test("while upstream is offline it reports that status and does not probe")
    func upstreamOffline() async {
        let transport = StubTransport(fallback: .status(204))
        let upstream = ManualMonitor(.offline(.noCarrier))
        let sleep = ScriptedSleep(free: 0)
        let monitor = ProbeMonitor(configuration: configuration(), transport: transport, upstream: upstream, sleep: sleep.sleep)
        #expect(monitor.status == .offline(.noCarrier))
        monitor.start()
        defer { monitor.stop() }
        #expect(await sleep.waitForDelays(1))
        #expect(transport.recordedRequests.isEmpty)
        upstream.status = .online(interface: "eth0", family: .ipv4)
        #expect(await waitForStatus(monitor, .online(interface: "eth0", family: .ipv4)))
        #expect(transport.recordedRequests.count == 1)
    }

    @Test("stop ends the status streams")
    func stopEnds() async {
        let monitor = ProbeMonitor(configuration: configuration(), transport: StubTransport(fallback: .status(204)), sleep: ScriptedSleep(free: 0).sleep)
        monitor.start()
        let recorder = StatusRecorder(monitor)
        monitor.stop()
        let seen = await recorder.finish()
        #expect(!seen.isEmpty)
    }

    @Test("releasing a running monitor stops it and ends its streams")
    func releaseStops() async {
        var monitor: ProbeMonitor? = ProbeMonitor(configuration: configuration(), transport: StubTransport(fallback: .status(204)), sleep: ScriptedSleep(free: 0).sleep)
        monitor?.start()
        let recorder = StatusRecorder(monitor!)
        monitor = nil
        let ended = await recorder.ends()
        #expect(ended, "the stream should end once the monitor is released")
    }

    @Test("a transport that ignores cancellation cannot hold a probe past its timeout")
    func stubbornTransport() async {
        var configuration = configuration()
        configuration.timeout = .milliseconds(100)
        let monitor = ProbeMonitor(configuration: configuration, transport: StubbornTransport())
        let outcome = await monitor.probe()
        guard case .failed(let message) = outcome else {
            Issue.record("expected the timeout to win, got \(outcome)")
            return
        }
        #expect(message.contains("timedOut"))
    }
}

/// Answers 204 after minutes, and does not stop when cancelled.
struct StubbornTransport: Transport {
    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        await Task.detached { try? await Task.sleep(for: .hangGuard) }.value
        return TransportResponse(head: HTTPResponse(status: .noContent), body: ByteStream(data: Data()))
    }
}
