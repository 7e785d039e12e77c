import CourierTesting
import Foundation
import HTTPCore
import InMemoryTracing
import MetricsTestKit
import OfflineQueue
import OfflineQueuePostgres
import PostgresNIO
import QueueEncryption
import Reachability
import QueueTestSupport
import Testing
import TestSupport
import Tracing

/// Every way an entry enters the queue goes through one preparation path: each is sealed when
/// the queue seals, keeps the trace context it was enqueued in, and is counted. The outbox,
/// which once rebuilt that path by hand and stored its entries in clear, among them.
@Suite("One way in: every entrance seals, keeps its trace and is counted")
struct EntryPathTests {
    static let marker = SealingTests.marker

    /// A request carrying the marker in its URL, a header and its body (`size` bytes).
    static func request(_ server: TestHTTPServer, _ path: String, size: Int, name: String) -> QueuedRequest {
        var body = Data(repeating: UInt8(ascii: "."), count: max(size, marker.utf8.count))
        body.replaceSubrange(0..<marker.utf8.count, with: Data(marker.utf8))
        return QueuedRequest(
            method: "POST", url: server.url("/echo/\(marker)/\(path)?m=\(marker)").absoluteString, headers: [("X-Private", marker)],
            body: .data(body), name: name
        )
    }

    @Test("the outbox seals on a queue that requires it: three entries of one transaction leave no marker in pg_dump, and drain whole")
    func outboxSeals() async throws {
        let store = try TestStore(.postgres)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let queue = try await makeQueue(on: store, server: server) {
                $0.sealing = QueueSealing(mode: .required, keyring: keyring)
                $0.inlineBodyLimit = 4096
            }
            // In the row with the request, in the row apart from it, and in chunks.
            let sizes = [100, 3_000, 300_000]
            let requests = sizes.enumerated().map { Self.request(server, "\($0.offset)", size: $0.element, name: "outbox") }
            let tickets = try await withPostgres(store.path) { connection in
                try await connection.withTransaction(logger: testLogger) { connection in
                    try await queue.enqueue(requests, on: connection)
                }
            }
            #expect(tickets.count == 3)
            let status = try await queue.sealStatus()
            #expect(status.clear == 0 && status.sealed == [keyring.primary.id.rawValue: 3], "\(status)")
            try await SealingTests().expectNoMarker(in: store)

            #expect(try await drainUntilSettled(queue).delivered == 3)
            #expect(server.requests.count == 3)
            for request in server.requests {
                let index = try #require(request.path.split(separator: "/").last.flatMap { Int($0) })
                #expect(request.target == "/echo/\(Self.marker)/\(index)?m=\(Self.marker)")
                #expect(request.values(of: "X-Private") == [Self.marker])
                #expect(request.bodySize == max(sizes[index], Self.marker.utf8.count))
            }
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("enqueue of an endpoint, a prepared request, text and many; send when offline; the outbox; a re-seal: each sealed, traced and counted", arguments: StoreKind.allCases)
    func everyEntrance(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keyring = Keyring.generate()
            let tracer = W3CTestTracer()
            let metrics = TestMetrics()
            let monitor = ManualMonitor(.online(interface: "eth0", family: .ipv4))
            let queue = try await makeQueue(on: store, server: server, monitor: monitor) {
                $0.sealing = QueueSealing(mode: .on, keyring: keyring)
                $0.tracing.tracer = tracer
                $0.metrics.factory = metrics
            }
            let client = APIClient(baseURL: server.baseURL, transport: sharedTransport)
            let endpoint = { (path: String) in Request<Data>.post("/echo/\(Self.marker)/\(path)", body: .text(Self.marker)) }

            // Each entrance inside a span of its own: the entry must keep that span's trace.
            var traced: [(entrance: String, id: EntryID, traceID: String?)] = []
            func enter(_ entrance: String, _ body: () async throws -> [Ticket]) async throws {
                let (trace, tickets) = try await tracer.withSpan(entrance) { span in
                    (span.context.inMemorySpanContext?.traceID, try await body())
                }
                #expect(!tickets.isEmpty, "\(entrance) stored its entries")
                traced += tickets.map { (entrance, $0.id, trace) }
            }
            try await enter("endpoint") { [try await queue.enqueue(endpoint("endpoint"))] }
            try await enter("prepared") { [try await queue.enqueue(try client.request(for: endpoint("prepared")), name: "prepared")] }
            try await enter("text") {
                [try await queue.enqueue(method: "POST", url: server.url("/echo/\(Self.marker)/text").absoluteString, headers: [("X-Private", Self.marker)], name: "text")]
            }
            try await enter("many") {
                try await queue.enqueue([Self.request(server, "many-1", size: 10, name: "many"), Self.request(server, "many-2", size: 200_000, name: "many")])
            }
            monitor.status = .offline(.noLink)
            try await enter("send") {
                let outcome = try await queue.send(endpoint("send"))
                return [try #require(outcome.ticket, "send while offline stores the request")]
            }
            monitor.status = .online(interface: "eth0", family: .ipv4)
            if kind == .postgres {
                try await enter("outbox") {
                    try await withPostgres(store.path) { connection in
                        try await connection.withTransaction(logger: testLogger) { connection in
                            try await queue.enqueue([Self.request(server, "outbox", size: 300_000, name: "outbox")], on: connection)
                        }
                    }
                }
            }

            for (entrance, id, trace) in traced {
                let entry = try #require(try await queue.entry(id), "\(entrance)")
                #expect(entry.sealKeyID == keyring.primary.id.rawValue, "\(entrance) sealed")
                #expect(!entry.url.contains(Self.marker) && entry.headers.isEmpty, "\(entrance): nothing of the request in clear")
                #expect(trace != nil && entry.traceContext?.traceID == trace, "\(entrance) keeps the trace it was enqueued in")
            }
            let origin = "POST " + server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            let counted = [(origin, 2), ("prepared", 1), ("text", 1), ("many", 2)] + (kind == .postgres ? [("outbox", 1)] : [])
            for (name, count) in counted {
                #expect(try metrics.expectCounter("courier_queue_enqueued_total", [("endpoint", name)]).totalValue == count, "\(name) counted")
            }
            if kind != .memory { try await SealingTests().expectNoMarker(in: store) }

            // A rotation writes every entry again through the same body step: sealed under the new
            // key, its trace kept.
            let rotated = try Keyring(primary: QueueKey.generate(), decryptOnly: [keyring.primary])
            let summary = try await queue.reseal(.otherKeys, keyring: rotated)
            #expect(summary.resealed == traced.count && summary.skipped == 0)
            for (entrance, id, trace) in traced {
                let entry = try #require(try await queue.entry(id))
                #expect(entry.sealKeyID == rotated.primary.id.rawValue, "\(entrance) re-sealed")
                #expect(entry.traceContext?.traceID == trace, "\(entrance) keeps its trace through the re-seal")
            }
            await queue.close()
            await server.shutdown()
        }
    }
}
