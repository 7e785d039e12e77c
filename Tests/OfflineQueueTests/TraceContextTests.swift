import CourierTesting
import Foundation
import GRDB
import HTTPCore
import InMemoryTracing
import OfflineQueue
import PostgresNIO
import QueueEncryption
import QueueTestSupport
import Testing
import TestSupport
import Tracing

/// One trace from the enqueue to the delivery: the context an entry keeps (W3C, checked), on
/// every store and across a schema change; each attempt's span a child of the enqueuer's and
/// its request carrying the same trace; with no tracer, the stored fields sent as they are.
@Suite("Trace context: kept at the enqueue, continued at each delivery")
struct TraceContextTests {
    static let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    // MARK: - The format

    @Test("W3C traceparent: version 00, lowercase hex ids not all zeros, 55 characters; anything else refused with its field named")
    func traceparentFormat() throws {
        let context = try TraceContext(traceparent: Self.parent)
        #expect(context.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && context.parentID == "00f067aa0ba902b7" && context.tracestate == nil)
        for bad in [
            "", "garbage", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            #expect(throws: InvalidTraceContext.self, "\(bad)") { try TraceContext(traceparent: bad) }
        }
        let error = #expect(throws: InvalidTraceContext.self) { try TraceContext(traceparent: "garbage") }
        #expect(error?.field == "traceparent")
    }

    @Test("W3C tracestate: list-members of the specification's keys and values, at most 512 characters and 32 members, no key twice")
    func tracestateFormat() throws {
        for good in ["congo=t61rcWkgMzE", "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE", "tenant@vendor=x", "a=b,,c=d", "k/v_*-1=value with space.x"] {
            #expect(try TraceContext(traceparent: Self.parent, tracestate: good).tracestate == good)
        }
        #expect(try TraceContext(traceparent: Self.parent, tracestate: " , ").tracestate == nil, "an empty list is none")
        let tooMany = (0..<33).map { "k\($0)=v" }.joined(separator: ",")
        for bad in ["novalue", "Upper=x", "a=b,a=c", "a=b=c", "a=", "a=\u{7F}", "1abc=x", "a@Vendor=x", String(repeating: "a", count: 513) + "=x", tooMany] {
            let error = #expect(throws: InvalidTraceContext.self, "\(bad)") { try TraceContext(traceparent: Self.parent, tracestate: bad) }
            #expect(error?.field == "tracestate")
        }
        // Lenient: a bad tracestate is left out, a bad traceparent gives nothing; neither throws.
        let kept = TraceContext.lenient(traceparent: Self.parent, tracestate: "a=b,a=c")
        #expect(kept.context?.traceparent == Self.parent && kept.context?.tracestate == nil && kept.problem?.field == "tracestate")
        #expect(TraceContext.lenient(traceparent: "garbage", tracestate: "a=b").context == nil)
        #expect(TraceContext.lenient(traceparent: nil, tracestate: "a=b") == (nil, nil))
    }

    // MARK: - Kept at the enqueue

    @Test("an enqueue keeps the context it runs in, the request's own traceparent before it, a given one before both; a malformed one is dropped and the enqueue goes on")
    func capture() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let tracer = W3CTestTracer()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.tracing.tracer = tracer }
        let url = server.url("/echo").absoluteString
        let (ambient, inSpan) = try await tracer.withSpan("save") { span in
            (span.context.inMemorySpanContext, try await queue.enqueue(method: "POST", url: url))
        }
        let kept = try #require(try await queue.entry(inSpan.id)?.traceContext)
        #expect(kept.traceID == ambient?.traceID && kept.parentID == ambient?.spanID, "the enqueuer's span is the parent")
        let outside = try await queue.enqueue(method: "POST", url: url)
        #expect(try await queue.entry(outside.id)?.traceContext == nil, "no span, no context")
        // The request's own fields win over the task's context, and are not stored as headers.
        let own = try await tracer.withSpan("save") { _ in
            try await queue.enqueue(method: "POST", url: url, headers: [("traceparent", Self.parent), ("tracestate", "congo=t61rcWkgMzE"), ("X-Kept", "1")])
        }
        let ownEntry = try #require(try await queue.entry(own.id))
        #expect(ownEntry.traceContext == (try TraceContext(traceparent: Self.parent, tracestate: "congo=t61rcWkgMzE")))
        #expect(ownEntry.headers == [StoredHeader(name: "X-Kept", value: "1")])
        // A malformed own field stays the request's header, untouched; no context is made up.
        let malformed = try await queue.enqueue(method: "POST", url: url, headers: [("traceparent", "00-bad-01")])
        let malformedEntry = try #require(try await queue.entry(malformed.id))
        #expect(malformedEntry.traceContext == nil && malformedEntry.headers == [StoredHeader(name: "traceparent", value: "00-bad-01")])
        // Given with the request: it wins.
        var given = QueuedRequest(method: "POST", url: url, headers: [("traceparent", Self.parent)])
        given.traceContext = try TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        let givenID = try await queue.enqueue([given])[0].id
        #expect(try await queue.entry(givenID)?.traceContext?.traceID == "0af7651916cd43dd8448eb211c80319c")
        // A tracer whose context is garbage: the enqueue goes on without one.
        let garbledTracer = W3CTestTracer(injecting: "00-not-a-trace-01")
        let garbled = try makeQueue(path: folder.databasePath, server: server) { $0.tracing.tracer = garbledTracer }
        let survived = try await garbledTracer.withSpan("save") { _ in try await garbled.enqueue(method: "POST", url: url) }
        #expect(try await garbled.entry(survived.id)?.traceContext == nil)
        #expect(try await queue.drain().delivered == 6)
        await server.shutdown()
    }

    @Test("sealed at rest, the context stays clear in its columns while the request's headers are sealed")
    func clearWhenSealed() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.sealing = QueueSealing(mode: .on, keyring: Keyring.generate()) }
        var request = QueuedRequest(method: "POST", url: server.url("/echo?secret=1").absoluteString, headers: [("X-Secret", "s")])
        request.traceContext = try TraceContext(traceparent: Self.parent, tracestate: "congo=t61rcWkgMzE")
        let id = try await queue.enqueue([request])[0].id
        let row = try await DatabaseQueue(path: folder.databasePath).read { db in
            try String.fetchAll(db, sql: "SELECT traceparent || ' ' || tracestate || ' ' || seal_key || ' [' || headers || ']' FROM entry WHERE id = ?", arguments: [id])
        }
        let key = try #require(try await queue.entry(id)?.sealKeyID)
        #expect(row == ["\(Self.parent) congo=t61rcWkgMzE \(key) []"], "the context in clear, the request's headers sealed")
        #expect(try await queue.drain().delivered == 1)
        let sent = try #require(server.requests.last)
        #expect(sent.values(of: "traceparent") == [Self.parent] && sent.values(of: "X-Secret") == ["s"])
        await server.shutdown()
    }

    // MARK: - A queue made before

    @Test("a SQLite queue of schema 9 opens, migrates to 10 and drains its entries, which have no context")
    func olderSQLiteFile() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        do {
            let queue = try makeQueue(path: folder.databasePath, server: server)
            for _ in 0..<3 { _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString) }
            await queue.close()
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        try await DatabaseQueue(path: folder.databasePath, configuration: configuration).write { try $0.execute(sql: backToSchema9) }
        let reader = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = true }
        #expect(try await reader.entries().count == 3, "a reader reads schema 9 as it is")
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let version = try await DatabaseQueue(path: folder.databasePath).read { try Int.fetchOne($0, sql: "PRAGMA user_version") }
        #expect(version == 18)
        #expect(try await queue.entries().allSatisfy { $0.traceContext == nil })
        #expect(try await queue.drain().delivered == 3)
        #expect(server.requests.allSatisfy { $0.values(of: "traceparent").isEmpty })
        await server.shutdown()
    }

    @Test("a PostgreSQL queue of migration v3 opens, migrates and drains its entries, which have no context")
    func olderPostgresSchema() async throws {
        let store = try TestStore(.postgres)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let schema = try #require(store.schema)
            do {
                let queue = try await makeQueue(on: store, server: server)
                for _ in 0..<3 { _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString) }
                await queue.close()
            }
            // v15, v14, v13, v12, v11, v10, v9, v8, v7, v6, v5 and v4 undone: their tables, functions, triggers, columns and
            // records gone (each makes `settle_and_claim` anew; v9's has three arguments more,
            // so one with v2's arguments stands in for v4 to drop; v10 keeps v9's; v15's has six
            // more, so v9's stands in for it).
            let v2Arguments = """
                bigint[], double precision, bigint[], text[], integer[], double precision[], boolean[], integer[], text[], text[],
                boolean[], text[], boolean, text, bigint, integer, text, double precision, double precision
                """
            _ = try await withPostgres(store.path) { connection in
                for statement in [
                    "DROP FUNCTION \"\(schema)\".settle_and_claim(\(v2Arguments), double precision[], integer, integer, text[], boolean[], double precision[], integer, double precision, double precision)",
                    "CREATE FUNCTION \"\(schema)\".settle_and_claim(\(v2Arguments), double precision[], integer, integer) RETURNS void LANGUAGE sql AS ''",
                    "DROP FUNCTION \"\(schema)\".circuit_fail(text, text, boolean, double precision, double precision, integer, double precision, double precision)",
                    "ALTER TABLE \"\(schema)\".origin_flow DROP COLUMN open_after, DROP COLUMN failures, DROP COLUMN last_failure, DROP COLUMN open_until, DROP COLUMN probe_wait, DROP COLUMN opened_at",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v15-origin-health'",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v14-group-in-flight'",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v13-flow-refill'",
                    "DROP INDEX \"\(schema)\".entry_finished", "DELETE FROM \"\(schema)\".migration WHERE name = 'v12-retention'",
                    "DROP TABLE \"\(schema)\".activity_minute", "DELETE FROM \"\(schema)\".migration WHERE name = 'v11-activity'",
                    "DROP FUNCTION \"\(schema)\".settle_and_claim(\(v2Arguments), double precision[], integer, integer)",
                    "CREATE FUNCTION \"\(schema)\".settle_and_claim(\(v2Arguments)) RETURNS void LANGUAGE sql AS ''",
                    "DROP FUNCTION \"\(schema)\".pattern_for(text)", "DROP FUNCTION \"\(schema)\".origin_matches(text, text)",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v10-origin-patterns'",
                    "DROP FUNCTION \"\(schema)\".origin_of(text)", "DROP TABLE \"\(schema)\".origin_flow",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v9-origin-flow'",
                    "ALTER TABLE \"\(schema)\".entry DROP COLUMN delivery",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v8-conflicts'",
                    "ALTER TABLE \"\(schema)\".entry DROP COLUMN response_sources, DROP COLUMN coalesce_key",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v7-offline-steps'",
                    "DROP TRIGGER entry_settled ON \"\(schema)\".entry", "DROP TRIGGER entry_removed ON \"\(schema)\".entry",
                    "DROP FUNCTION \"\(schema)\".notify_settled()", "DROP TABLE \"\(schema)\".entry_response",
                    "ALTER TABLE \"\(schema)\".entry DROP COLUMN keep_response",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v6-kept-responses'",
                    "DROP FUNCTION \"\(schema)\".resolve_blocked(bigint[], double precision)", "DROP TABLE \"\(schema)\".entry_edge",
                    "DELETE FROM \"\(schema)\".migration WHERE name = 'v5-dependencies'",
                ] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: testLogger)
                }
                try await connection.query(PostgresQuery(unsafeSQL: """
                    ALTER TABLE "\(schema)".entry DROP COLUMN traceparent, DROP COLUMN tracestate
                    """), logger: testLogger)
                try await connection.query(PostgresQuery(unsafeSQL: "DELETE FROM \"\(schema)\".migration WHERE name = 'v4-trace-context'"), logger: testLogger)
            }
            let queue = try await makeQueue(on: store, server: server)
            #expect(try await queue.entries().allSatisfy { $0.traceContext == nil })
            #expect(try await queue.drain().delivered == 3)
            #expect(server.requests.allSatisfy { $0.values(of: "traceparent").isEmpty })
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("a stored context changed by hand into garbage is read as none: the entry is delivered without one")
    func garbledRow() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        var request = QueuedRequest(method: "POST", url: server.url("/echo").absoluteString)
        request.traceContext = try TraceContext(traceparent: Self.parent)
        let id = try await queue.enqueue([request])[0].id
        try await DatabaseQueue(path: folder.databasePath).write {
            try $0.execute(sql: "UPDATE entry SET traceparent = 'garbage\nInjected: 1', tracestate = 'x' WHERE id = ?", arguments: [id])
        }
        #expect(try await queue.entry(id)?.traceContext == nil)
        #expect(try await queue.drain().delivered == 1)
        let sent = try #require(server.requests.last)
        #expect(sent.values(of: "traceparent").isEmpty && sent.values(of: "Injected").isEmpty)
        await server.shutdown()
    }
}
