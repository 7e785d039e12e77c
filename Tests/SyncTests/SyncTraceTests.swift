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
        let drained = try await sync("drain", "--no-reachability", "--log-level", "debug")
        #expect(drained.status == 0 && drained.stdout.contains("delivered 4"), "\(drained.stdout)\(drained.stderr)")
        // With no tracer, an attempt's line names the stored trace, and no span of its own.
        let lines = drained.stderr.split(separator: "\n").filter { $0.contains("msg=delivered") }
        #expect(lines.count == 4, "\(drained.stderr)")
        #expect(lines.filter { $0.contains("trace_id=4bf92f3577b34da6a3ce929d0e0e4736") }.count == 2, "traced and bad-state")
        #expect(!lines.contains { $0.contains("span_id=") })
        let sent = Dictionary(uniqueKeysWithValues: fixture.server.requests.map { ($0.queryValue("n") ?? "", $0) })
        #expect(sent["traced"]?.values(of: "traceparent") == [Self.parent])
        #expect(sent["traced"]?.values(of: "tracestate") == ["congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"])
        #expect(sent["plain"]?.values(of: "traceparent") == [], "no other entry's context")
        #expect(sent["malformed"]?.values(of: "traceparent") == [])
        #expect(sent["bad-state"]?.values(of: "traceparent") == [Self.parent] && sent["bad-state"]?.values(of: "tracestate") == [])
        await fixture.finish()
    }

    #if OTLP
    /// A queue with one entry enqueued under ``parent`` (`?n=traced`) and one outside any
    /// trace (`?n=plain`), and a receiver keeping what is POSTed to its `/v1/traces`.
    private func exportFixture() async throws -> (SyncCommandTests.Fixture, TestHTTPServer, SyncRunner) {
        let fixture = try await SyncCommandTests.Fixture()
        let receiver = try await TestHTTPServer.start()
        receiver.keepBodies(of: "/v1/traces")
        receiver.script("/v1/traces", headers: [HeaderField(name: "Content-Type", value: "application/x-protobuf")])
        var sync = fixture.sync
        sync.environment["TRACEPARENT"] = Self.parent
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=traced")).status == 0)
        sync.environment["TRACEPARENT"] = ""
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=plain")).status == 0)
        sync.environment["OTEL_TRACES_EXPORTER"] = "otlp"
        sync.environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.baseURL.absoluteString
        sync.environment["OTEL_SERVICE_NAME"] = "courier-sync-under-test"
        return (fixture, receiver, sync)
    }

    /// What the receiver must hold once `sync` has exited, and the attempt's log line: the
    /// delivery's span (the traced entry's trace, a child of the enqueuer's span) and the drain's.
    private func checkExport(fixture: SyncCommandTests.Fixture, receiver: TestHTTPServer, log: String) throws {
        let sent = Dictionary(uniqueKeysWithValues: fixture.server.requests.map { ($0.queryValue("n") ?? "", $0) })
        let traced = try #require(sent["traced"]?.values(of: "traceparent").first).split(separator: "-").map(String.init)
        #expect(traced.count == 4 && traced[1] == "4bf92f3577b34da6a3ce929d0e0e4736", "the enqueuer's trace: \(traced)")
        #expect(traced[2] != "00f067aa0ba902b7", "the attempt's own span, not the enqueuer's")
        let plain = try #require(sent["plain"]?.values(of: "traceparent").first).split(separator: "-").map(String.init)
        #expect(plain.count == 4 && plain[1] != traced[1], "an entry enqueued outside any trace does not take another's")
        let posts = receiver.requests.filter { $0.path == "/v1/traces" }
        #expect(!posts.isEmpty && posts.allSatisfy { $0.method == "POST" && $0.values(of: "content-type") == ["application/x-protobuf"] })
        // OTLP/HTTP's protobuf carries ids as raw bytes and names as UTF-8: found in the payload
        // without decoding it.
        let exported = receiver.bodies(of: "/v1/traces").reduce(Data(), +)
        for (what, bytes) in [
            ("the trace id", Self.bytes(hex: traced[1])), ("the attempt's span id", Self.bytes(hex: traced[2])),
            ("the enqueuer's span id, as the attempt's parent", Self.bytes(hex: "00f067aa0ba902b7")),
            ("the service name", Data("courier-sync-under-test".utf8)), ("the drain's span", Data("queue drain".utf8)),
            ("the entry's id attribute", Data("courier.queue.entry.id".utf8)), ("the plain entry's trace", Self.bytes(hex: plain[1])),
        ] {
            #expect(exported.range(of: bytes) != nil, "\(what) is not in the \(exported.count) bytes exported")
        }
        let line = log.split(separator: "\n").first { $0.contains("msg=delivered") && $0.contains("trace_id=\(traced[1])") }
        #expect(line?.contains("span_id=\(traced[2])") == true, "the attempt's line names its span: \(log)")
    }

    static func bytes(hex: String) -> Data {
        let digits = Array(hex.utf8)
        return Data(stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! })
    }

    @Test("OTEL_TRACES_EXPORTER=otlp: sync drain's spans reach an OTLP/HTTP receiver before it exits, and each attempt's line names its trace_id and span_id")
    func drainExports() async throws {
        let (fixture, receiver, sync) = try await exportFixture()
        let drained = try await sync("drain", "--no-reachability", "--log-level", "debug")
        #expect(drained.status == 0 && drained.stdout.contains("delivered 2"), "\(drained.stdout)\(drained.stderr)")
        // Read at once: what was not exported before the exit is not there.
        try checkExport(fixture: fixture, receiver: receiver, log: drained.stderr)
        await receiver.shutdown()
        await fixture.finish()
    }

    @Test("OTEL_TRACES_EXPORTER=otlp: sync run flushes its spans as SIGTERM stops it")
    func runExports() async throws {
        let (fixture, receiver, sync) = try await exportFixture()
        let (process, _, errors) = try sync.start(["run", "--no-reachability", "--log-level", "debug"])
        let log = readToEnd(errors.fileHandleForReading)
        #expect(await fixture.server.waitForRequest(path: "/echo") != nil)
        // Both delivered: their spans wait in the batch processor (5 s by default) until the stop.
        #expect(await eventually { (try? await sync("--json", "stats").json() as? [String: Any])?["delivered"] as? Int == 2 }, "both delivered")
        process.signal(SIGTERM)
        try await SyncRunner.wait(for: process, limit: .hangGuard)
        #expect(process.terminationStatus == 0)
        try checkExport(fixture: fixture, receiver: receiver, log: String(decoding: await log.value, as: UTF8.self))
        await receiver.shutdown()
        await fixture.finish()
    }

    @Test("OTEL_* that sync cannot honour stop it with 78 before the queue is touched; OTEL_SDK_DISABLED=true turns the export off")
    func exportRefused() async throws {
        let (fixture, receiver, sync) = try await exportFixture()
        for (name, value, named) in [
            ("OTEL_TRACES_EXPORTER", "zipkin", "OTEL_TRACES_EXPORTER=zipkin"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
        ] {
            var refused = sync
            refused.environment[name] = value
            let drained = try await refused("drain", "--no-reachability")
            #expect(drained.status == 78 && drained.stderr.contains(named), "\(drained.status): \(drained.stderr)")
        }
        #expect(fixture.server.requests.isEmpty, "nothing was sent")
        var disabled = sync
        disabled.environment["OTEL_SDK_DISABLED"] = "true"
        let drained = try await disabled("drain", "--no-reachability")
        #expect(drained.status == 0 && drained.stdout.contains("delivered 2"), "\(drained.stdout)\(drained.stderr)")
        #expect(receiver.requests.isEmpty, "no export")
        await receiver.shutdown()
        await fixture.finish()
    }

    #else
    @Test("a sync built without the OTLP trait refuses OTEL_TRACES_EXPORTER=otlp with 78 and says how to build it; none and OTEL_SDK_DISABLED drain as usual")
    func exportNotBuilt() async throws {
        let fixture = try await SyncCommandTests.Fixture()
        var sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=plain")).status == 0)
        sync.environment["OTEL_TRACES_EXPORTER"] = "otlp"
        let refused = try await sync("drain", "--no-reachability")
        #expect(refused.status == 78 && refused.stderr.contains("--traits OTLP"), "\(refused.status): \(refused.stderr)")
        #expect(fixture.server.requests.isEmpty, "nothing was sent")
        sync.environment["OTEL_SDK_DISABLED"] = "true"
        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 0 && drained.stdout.contains("delivered 1"), "\(drained.stdout)\(drained.stderr)")
        await fixture.finish()
    }
    #endif

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
