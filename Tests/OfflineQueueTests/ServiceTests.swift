import Foundation
import HTTPCore
import Logging
@testable import OfflineQueue
import ServiceLifecycle
import Testing
import TestSupport

/// The queue as a swift-service-lifecycle service.
@Suite("QueueService: background drain and graceful shutdown")
struct ServiceTests {
    @Test("graceful shutdown mid-send: sends past the grace period are cancelled and their entries given back", arguments: StoreKind.allCases)
    func shutdownReleasesLeases(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        defer { Task { await store.remove() } }
        let server = try await TestHTTPServer.start()
        server.route("/hang") { _, writer in
            try await Task.sleep(for: .hangGuard)
            try await writer.respond(status: 200)
        }
        let queue = try await makeQueue(on: store, server: server)
        for index in 0..<4 {
            _ = try await queue.enqueue(method: "POST", url: server.url("/hang?n=\(index)").absoluteString)
        }
        let service = queue.service(pollInterval: .seconds(3600), shutdownGrace: .milliseconds(200), logger: Logger(label: "test"))
        let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        #expect(try await eventually { try await queue.counts().inflight == 4 })
        await group.triggerGracefulShutdown()
        try await running.value
        let counts = try await queue.counts()
        #expect(counts.inflight == 0, "no lease left behind")
        #expect(counts.pending == 4)
        #expect(try await queue.entries().allSatisfy { $0.attempts == 0 && $0.leaseOwner == nil }, "an interrupted send does not count")
        await server.shutdown()
    }

    @Test("the service drains what this process enqueues while it runs, at once", arguments: StoreKind.allCases)
    func drainsNewWork(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        defer { Task { await store.remove() } }
        let server = try await TestHTTPServer.start()
        let queue = try await makeQueue(on: store, server: server)
        let service = queue.service(pollInterval: .seconds(3600), logger: Logger(label: "test"))
        let running = Task { try await service.run() }
        // Parked in its wait (its first drain found nothing): only the enqueue can wake it.
        #expect(await eventually { queue.enqueued.waiting >= 1 }, "the service parked")
        let ticket = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        #expect(await eventually { (try? await queue.entry(ticket.id))?.state == .delivered })
        service.shutDown()
        try await running.value
        await server.shutdown()
    }
}
