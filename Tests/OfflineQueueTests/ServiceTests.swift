import Foundation
import HTTPCore
import InMemoryLogging
import Logging
@testable import OfflineQueue
@testable import OfflineQueueCore
import ServiceLifecycle
import QueueTestSupport
import Reachability
import Testing
import TestSupport

/// The queue as a swift-service-lifecycle service, on the queue's injected clock: its poll, the
/// next due time and the shutdown grace are moved by the test, never waited for.
@Suite("QueueService: background drain and graceful shutdown")
struct ServiceTests {
    @Test("graceful shutdown mid-send: sends past the grace period are cancelled and their entries given back", arguments: StoreKind.allCases)
    func shutdownReleasesLeases(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            server.route("/hang") { _, writer in
                try await Task.sleep(for: .hangGuard)
                try await writer.respond(status: 200)
            }
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: server) { $0.clock = clock.queueClock }
            for index in 0..<4 {
                _ = try await queue.enqueue(method: "POST", url: server.url("/hang?n=\(index)").absoluteString)
            }
            let service = queue.service(pollInterval: .seconds(3600), shutdownGrace: .seconds(8), logger: Logger(label: "test"))
            let group = ServiceGroup(services: [service], logger: Logger(label: "test"))
            let running = Task { try await group.run() }
            #expect(try await eventually { try await queue.counts().inflight == 4 })
            await group.triggerGracefulShutdown()
            // The grace passes on the queue's clock, a second at a time, until the service ends.
            let ended = LockedBox(false)
            let waiting = Task {
                _ = try? await running.value
                ended.withLock { $0 = true }
            }
            #expect(await eventually {
                clock.advance(by: .seconds(1))
                return ended.current
            }, "the service ended once the grace had passed")
            await waiting.value
            let counts = try await queue.counts()
            #expect(counts.inflight == 0, "no lease left behind")
            #expect(counts.pending == 4)
            #expect(try await queue.entries().allSatisfy { $0.attempts == 0 && $0.leaseOwner == nil }, "an interrupted send does not count")
            await server.shutdown()
        }
    }

    @Test("the service drains what this process enqueues while it runs, at once", arguments: StoreKind.allCases)
    func drainsNewWork(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            // A poll of an hour on a clock that never moves: only the enqueue can wake it.
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: server) { $0.clock = clock.queueClock }
            let service = queue.service(pollInterval: .seconds(3600), logger: Logger(label: "test"))
            let running = Task { try await service.run() }
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "the service parked")
            let ticket = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
            #expect(await eventually { (try? await queue.entry(ticket.id))?.state == .delivered })
            service.shutDown()
            try await running.value
            await server.shutdown()
        }
    }

    @Test("an entry due in half an hour is sent when the queue's clock gets there, and not before; the hour's poll is the clock's too", arguments: StoreKind.allCases)
    func dueTimeAndPollOnTheClock(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: server) { $0.clock = clock.queueClock }
            let notBefore = clock.queueClock.now().wall.addingTimeInterval(1800)
            let later = try await queue.enqueue(method: "POST", url: server.url("/echo?n=later").absoluteString, options: EnqueueOptions(notBefore: notBefore))
            // The service's own account of its loop (each wait's end on the boot clock), shown
            // with a failure.
            var logs = InMemoryLogHandler()
            logs.logLevel = .debug
            let service = queue.service(pollInterval: .seconds(3600), logger: Logger(label: "service") { [logs] _ in logs })
            let account = { "the clock at \(clock.queueClock.now().uptime); the service: " + logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "; ") }
            let beats = service.heartbeat
            let running = Task { try await service.run() }
            // Parked until the entry is due: its drain found it not due yet.
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "the service parked")
            clock.advance(by: .seconds(1799))
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "parked again, a second early")
            #expect(server.requests.isEmpty, "not sent before it is due")
            clock.advance(by: .seconds(1))
            #expect(await eventually { (try? await queue.entry(later.id))?.state == .delivered }, "sent when due; \(account())")

            // Next due in two hours: the poll, an hour on the queue's clock, wakes it first.
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "the service parked")
            let distant = try await queue.enqueue(
                method: "POST", url: server.url("/echo?n=distant").absoluteString,
                options: EnqueueOptions(notBefore: clock.queueClock.now().wall.addingTimeInterval(7200))
            )
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "parked after the enqueue's drain")
            let before = beats.count
            clock.advance(by: .seconds(3600))
            #expect(await eventually { beats.count > before }, "the poll ended the wait")
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "parked again")
            #expect(server.requests.count == 1, "the distant entry is not due at the poll")
            clock.advance(by: .seconds(3600))
            #expect(await eventually { (try? await queue.entry(distant.id))?.state == .delivered }, "sent when due")
            service.shutDown()
            try await running.value
            await server.shutdown()
        }
    }

    @Test("with a reconnect spread, the first drain after the network returns waits this host's share of it on the queue's clock; without one it goes at once", arguments: [true, false])
    func reconnectSpread(_ spread: Bool) async throws {
        let store = try TestStore(.memory)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let clock = ManualQueueClock()
            let monitor = ManualMonitor(.offline(.noCarrier))
            let queue = try await makeQueue(on: store, server: server, monitor: monitor) { configuration in
                configuration.clock = clock.queueClock
                if spread { configuration.flow.reconnectSpread = .seconds(1000) }
            }
            let service = queue.service(pollInterval: .seconds(3600), logger: Logger(label: "test"))
            let running = Task { try await service.run() }
            let ticket = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "the service parked, offline")
            monitor.status = .online(interface: "lo", family: .ipv4)
            guard spread else {
                #expect(await eventually { (try? await queue.entry(ticket.id))?.state == .delivered }, "at once without a spread")
                service.shutDown()
                try await running.value
                await server.shutdown()
                return
            }
            let share = FlowControl.hostShare * 1000
            let back = clock.queueClock.now().uptime
            #expect(await eventually { clock.sleeperDeadlines.contains { abs($0 - (back + share)) < 0.001 } }, "the service waits its share of the spread")
            #expect(server.requests.isEmpty)
            clock.advance(by: .milliseconds(Int64(max(0, share - 1) * 1000)))
            #expect(await eventually { clock.sleepers >= 1 })
            #expect(server.requests.isEmpty, "not before this host's share (\(share) s of 1000) has passed")
            clock.advance(by: .seconds(2))
            #expect(await eventually { (try? await queue.entry(ticket.id))?.state == .delivered }, "sent once its share passed")
            service.shutDown()
            try await running.value
            await server.shutdown()
        }
    }
}
