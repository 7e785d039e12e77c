import Foundation
import Testing
import TestSupport

/// A shell's trace continues into the queue: `sync enqueue` keeps `TRACEPARENT` and
/// `TRACESTATE`, and `sync drain` sends them on the delivered request.
@Suite("sync: a trace from TRACEPARENT to the delivery")
struct SyncTraceTests {
    static let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("TRACEPARENT and TRACESTATE at enqueue reach the server at drain; an entry without them carries none; a malformed one warns and enqueues", arguments: [false, true])
    func fromTheEnvironment(postgres: Bool) async throws {
        let fixture = try await SyncCommandTests.Fixture(postgres: postgres)
        var sync = fixture.sync
        sync.environment["TRACEPARENT"] = Self.parent
        sync.environment["TRACESTATE"] = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
        let traced = try await sync("enqueue", "POST", fixture.url("/echo?n=traced"))
        #expect(traced.status == 0 && !traced.stderr.contains("warning"), "\(traced.stderr)")
        sync.environment["TRACEPARENT"] = ""
        sync.environment["TRACESTATE"] = ""
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=plain")).status == 0)
        sync.environment["TRACEPARENT"] = "00-not-a-trace-01"
        let malformed = try await sync("enqueue", "POST", fixture.url("/echo?n=malformed"))
        #expect(malformed.status == 0, "a malformed context never fails an enqueue")
        #expect(malformed.stderr.contains("warning: ignoring TRACEPARENT"), "\(malformed.stderr)")
        sync.environment["TRACEPARENT"] = Self.parent
        sync.environment["TRACESTATE"] = "Not Valid"
        let badState = try await sync("enqueue", "POST", fixture.url("/echo?n=bad-state"))
        #expect(badState.status == 0 && badState.stderr.contains("warning: ignoring TRACESTATE"), "\(badState.stderr)")
        sync.environment["TRACEPARENT"] = ""
        sync.environment["TRACESTATE"] = ""
        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 0 && drained.stdout.contains("delivered 4"), "\(drained.stdout)\(drained.stderr)")
        let sent = Dictionary(uniqueKeysWithValues: fixture.server.requests.map { ($0.queryValue("n") ?? "", $0) })
        #expect(sent["traced"]?.values(of: "traceparent") == [Self.parent])
        #expect(sent["traced"]?.values(of: "tracestate") == ["congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"])
        #expect(sent["plain"]?.values(of: "traceparent") == [], "no other entry's context")
        #expect(sent["malformed"]?.values(of: "traceparent") == [])
        #expect(sent["bad-state"]?.values(of: "traceparent") == [Self.parent] && sent["bad-state"]?.values(of: "tracestate") == [])
        await fixture.finish()
    }
}
