import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Reachability
import Testing

/// Judging single probes, through ``StubTransport``.
@Suite("ProbeMonitor.probe()")
struct ProbeOutcomeTests {
    private let url = URL(string: "http://probe.test/generate_204")!

    private func outcome(_ stub: StubTransport.Stub, configure: (inout ProbeConfiguration) -> Void = { _ in }) async -> ProbeOutcome {
        let transport = StubTransport(fallback: stub)
        var configuration = ProbeConfiguration(url: url)
        configure(&configuration)
        return await ProbeMonitor(configuration: configuration, transport: transport).probe()
    }

    @Test("204 where 204 is expected passes")
    func passes() async {
        #expect(await outcome(.status(204)) == .passed)
    }

    @Test("200 with a page where 204 is expected is a captive portal")
    func unexpectedOK() async {
        #expect(await outcome(StubTransport.Stub(status: .ok, body: Data("<html>login</html>".utf8))) == .captivePortal(status: 200))
    }

    @Test("a redirect where 204 is expected is a captive portal")
    func redirect() async {
        #expect(await outcome(.status(302, headers: [.location: "http://portal.test/login"])) == .captivePortal(status: 302))
    }

    @Test("the expected status with another body than expected is a captive portal")
    func wrongBody() async {
        let result = await outcome(StubTransport.Stub(status: .ok, body: Data("login".utf8))) {
            $0.expectedStatus = 200
            $0.expectedBody = Data("success\n".utf8)
        }
        #expect(result == .captivePortal(status: 200))
        let good = await outcome(StubTransport.Stub(status: .ok, body: Data("success\n".utf8))) {
            $0.expectedStatus = 200
            $0.expectedBody = Data("success\n".utf8)
        }
        #expect(good == .passed)
    }

    @Test("an error status or a transport failure is a failed probe")
    func failures() async {
        if case .failed = await outcome(.status(503)) {} else { Issue.record("503 should fail the probe") }
        if case .failed = await outcome(.failure(.transport(TransportFailure(.cannotConnect, "refused")))) {} else {
            Issue.record("a refused connection should fail the probe")
        }
    }

    @Test("no answer within the timeout is a failed probe, and the probe returns at the timeout")
    func timeout() async {
        let result = await outcome(StubTransport.Stub(status: .noContent, delay: .seconds(30))) { $0.timeout = .milliseconds(100) }
        guard case .failed(let message) = result else {
            Issue.record("expected a failed probe, got \(result)")
            return
        }
        #expect(message.contains("timedOut"))
    }
}
