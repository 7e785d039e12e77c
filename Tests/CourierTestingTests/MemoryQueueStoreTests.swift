import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueue
import Testing

/// `MemoryQueueStore` as a user's test meets it, through `OfflineQueue.inMemory` and a
/// `StubTransport`; the storage contract itself is held to the other stores' by the
/// store-conformance suite of `OfflineQueueTests`.
@Suite("MemoryQueueStore: an offline queue without a file")
struct MemoryQueueStoreTests {
    static func client(_ stub: StubTransport) -> APIClient {
        APIClient(baseURL: URL(string: "https://api.example.com")!, transport: stub)
    }

    @Test("the documented example: enqueue, drain, delivered with its idempotency key")
    func documentedExample() async throws {
        let stub = StubTransport(fallback: .status(201))
        let client = APIClient(baseURL: URL(string: "https://api.example.com")!, transport: stub)
        let queue = OfflineQueue.inMemory(client: client)
        let ticket = try await queue.enqueue(method: "POST", url: "https://api.example.com/events", body: .data(Data("{}".utf8)))
        let summary = try await queue.drain()
        #expect(summary.delivered == 1)
        #expect(try await queue.entry(ticket.id)?.state == .delivered)
        #expect(stub.recordedRequests.first?.head.headerFields[HTTPField.Name("Idempotency-Key")!] == ticket.idempotencyKey)
    }

    @Test("retries on the queue's clock, dead letters, and a large body kept apart and replayed whole")
    func retriesAndBodies() async throws {
        let stub = StubTransport()
        stub.on(.put, "/upload", respond: .status(503), .status(200))
        stub.on(.post, "/refused", respond: .status(422))
        let clock = ManualQueueClock()
        var configuration = QueueConfiguration(path: "memory", inlineBodyLimit: 1024)
        configuration.clock = clock.queueClock
        let queue = OfflineQueue.inMemory(configuration: configuration, client: Self.client(stub))
        let payload = Data((0..<100_000).map { UInt8($0 % 251) })
        let upload = try await queue.enqueue(method: "PUT", url: "https://api.example.com/upload", body: .data(payload))
        let refused = try await queue.enqueue(method: "POST", url: "https://api.example.com/refused")
        guard case .file = try await queue.entry(upload.id)?.body else { Issue.record("a large body is kept apart"); return }
        let first = try await queue.drain()
        #expect(first.dead == 1 && first.delivered == 0 && first.remaining == 1)
        #expect(try await queue.entry(refused.id)?.deadReason == .rejected)
        #expect(try await queue.drain().delivered == 0, "backing off: the clock has not moved")
        clock.advance(by: .seconds(3600))
        #expect(try await queue.drain().delivered == 1)
        #expect(stub.recordedRequests.filter { $0.head.path == "/upload" }.last?.body == payload)
        #expect(try await queue.integrityCheck() == ["ok"])
    }

    @Test("queues over one store share its entries, idempotency keys and pauses")
    func sharedStore() async throws {
        let stub = StubTransport(fallback: .status(200))
        let store = MemoryQueueStore()
        let sender = OfflineQueue.inMemory(store, client: Self.client(stub))
        let drainer = OfflineQueue.inMemory(store, client: Self.client(stub))
        let ticket = try await sender.enqueue(method: "POST", url: "https://api.example.com/events", options: EnqueueOptions(idempotencyKey: "once"))
        #expect(try await drainer.enqueue(method: "POST", url: "https://api.example.com/events", options: EnqueueOptions(idempotencyKey: "once")).deduplicated)
        #expect(try await sender.pause())
        #expect(try await drainer.drain().paused == 1)
        #expect(try await drainer.resume())
        #expect(try await drainer.drain().delivered == 1)
        #expect(try await sender.entry(ticket.id)?.state == .delivered)
        await sender.close()
        await drainer.close()
    }
}
