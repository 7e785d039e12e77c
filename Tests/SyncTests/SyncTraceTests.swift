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

    @Test("list --json and show print the entry's trace id; --trace-link must be an http(s) URL with {trace_id}")
    func shownToTheOperator() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        var sync = fixture.sync
        sync.environment["TRACEPARENT"] = Self.parent
        sync.environment["TRACESTATE"] = "congo=t61rcWkgMzE"
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=traced")).status == 0)
        sync.environment["TRACEPARENT"] = ""
        sync.environment["TRACESTATE"] = ""
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=plain")).status == 0)
        let listed = try #require(try await sync("--json", "list").json() as? [[String: Any]])
        #expect(listed.map { $0["trace_id"] as? String } == ["4bf92f3577b34da6a3ce929d0e0e4736", nil])
        #expect(listed.last?["trace_id"] is NSNull)
        let shown = try await sync("show", "1")
        #expect(shown.stdout.contains("trace_id: 4bf92f3577b34da6a3ce929d0e0e4736"), "\(shown.stdout)")
        #expect(shown.stdout.contains("tracestate: congo=t61rcWkgMzE"))
        let object = try #require(try await sync("--json", "show", "1").json() as? [String: Any])
        #expect(object["traceparent"] as? String == Self.parent)
        for bad in ["https://jaeger.example.com/trace/", "ftp://jaeger.example.com/{trace_id}", "not a url {trace_id}"] {
            let refused = try await sync("console", "--address", "127.0.0.1:0", "--trace-link", bad)
            #expect(refused.status == 64, "\(bad): \(refused.stderr)")
            #expect(refused.stderr.contains("--trace-link"))
        }
        await fixture.finish()
    }
}
