import Foundation
import HTTPCore
import HTTPTypes
import Logging
@testable import OfflineQueue
@testable import OfflineQueueCore
import OfflineQueuePostgres
import Reachability
import QueueTestSupport
import Testing
import TestSupport

/// The monitor drives the drain: nothing is sent while it says offline, and the service starts
/// draining as soon as it says online.
@Suite("Reachability drives the drain", .serialized)
struct ReachabilityDrainTests {
    @Test("offline: sends persist; flipping online drains at once (the delay is printed)", arguments: StoreKind.allCases)
    func manualFlip(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let monitor = ManualMonitor(.offline(.noLink))
            let queue = try await makeQueue(on: store, server: server, monitor: monitor)
            for index in 0..<20 {
                let outcome = try await queue.send(Request<Data>.post("/echo?n=\(index)", body: .text("event \(index)")))
                #expect(outcome.ticket != nil)
            }
            #expect(server.requests.isEmpty)
            #expect(try await queue.drain().offline, "a drain while offline sends nothing")
            #expect(server.requests.isEmpty)

            // An hour-long poll interval: only the monitor's change can wake the service.
            let service = queue.service(pollInterval: .seconds(3600), logger: Logger(label: "test"))
            let running = Task { try await service.run() }
            // Parked in its wait (offline, it drained nothing): only the monitor can wake it.
            #expect(await eventually { queue.enqueued.waiting >= 1 }, "the service parked")
            let events = queue.events()
            let flipped = ContinuousClock.now
            monitor.status = .online(interface: "eth0", family: .ipv4)
            let firstDelivery = LockedBox<Duration?>(nil)
            let watcher = Task {
                for await event in events {
                    if case .delivered = event {
                        firstDelivery.withLock { $0 = $0 ?? (.now - flipped) }
                    }
                }
            }
            #expect(try await eventually { try await queue.counts().delivered == 20 })
            print("online → first delivery: \(firstDelivery.current ?? .zero), all 20: \(ContinuousClock.now - flipped)")
            watcher.cancel()
            #expect(server.requests.count == 20)
            service.shutDown()
            try await running.value
            await server.shutdown()
        }
    }

    @Test("a send that finds the network gone waits for it without using an attempt, and resumes when it is back", arguments: StoreKind.allCases)
    func networkGoneDuringDrain(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let monitor = ManualMonitor(.online(interface: "eth0", family: .ipv4))
            let gone = LockedBox(true)
            // A transport that fails as a dead network does while `gone` is set.
            struct Flaky: Transport {
                let inner: any Transport
                let gone: LockedBox<Bool>
                let monitor: ManualMonitor
                func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
                    if gone.current {
                        monitor.status = .offline(.noCarrier)
                        throw NetworkError.transport(TransportFailure(.cannotConnect, "connect: network is unreachable"))
                    }
                    return try await inner.send(request, body: body, timeout: timeout)
                }
            }
            let client = APIClient(baseURL: server.baseURL, transport: Flaky(inner: sharedTransport, gone: gone, monitor: monitor))
            let queue = try await store.open(
                QueueConfiguration(path: store.path, durability: .normal, policy: DeliveryPolicy(maxAttempts: 2, networkRecheck: .seconds(3600))),
                client: client, monitor: monitor
            )
            let ticket = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
            let summary = try await queue.drain()
            #expect(summary.waitingForNetwork == 1)
            #expect(summary.offline)
            let waiting = try #require(try await queue.entry(ticket.id))
            #expect(waiting.attempts == 0)
            #expect(waiting.waitingForNetwork)
            #expect(waiting.nextAttemptAt > Date().addingTimeInterval(3000), "backing off for the network recheck")

            let service = queue.service(pollInterval: .seconds(3600), logger: Logger(label: "test"))
            let running = Task { try await service.run() }
            gone.withLock { $0 = false }
            monitor.status = .online(interface: "eth0", family: .ipv4)
            #expect(await eventually { (try? await queue.entry(ticket.id))?.state == .delivered }, "the hour-long wait was cut short")
            #expect(try await queue.entry(ticket.id)?.attempts == 1)
            service.shutDown()
            try await running.value
            await server.shutdown()
        }
    }

    @Test("with NetlinkMonitor in a network namespace: link down, enqueue, link up, drained", arguments: StoreKind.allCases)
    func netlinkNamespace(_ kind: StoreKind) async throws {
        let lab = try await NetworkLab()
        defer { lab.destroy() }
        let monitor = try NetlinkMonitor(namespacePath: lab.innerPath)
        defer { monitor.stop() }
        #expect(await eventually { monitor.status.isOnline })
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server, monitor: monitor)
            let service = queue.service(pollInterval: .seconds(3600), logger: Logger(label: "test"))
            let running = Task { try await service.run() }

            try await lab.inInner("link", "set", lab.innerLink, "down")
            #expect(await eventually { monitor.status.isOffline })
            var tickets: [Ticket] = []
            for index in 0..<10 {
                let outcome = try await queue.send(Request<Data>.post("/echo?n=\(index)", body: .text("\(index)")))
                tickets.append(try #require(outcome.ticket))
            }
            #expect(server.requests.isEmpty)

            let up = ContinuousClock.now
            try await lab.inInner("link", "set", lab.innerLink, "up")
            try await lab.inInner("route", "replace", "default", "via", NetworkLab.outerAddress)
            #expect(try await eventually { try await queue.counts().delivered == 10 })
            print("netlink link up → 10 delivered: \(ContinuousClock.now - up)")
            #expect(Set(idempotencyKeys(server)) == Set(tickets.map(\.idempotencyKey)))
            service.shutDown()
            try await running.value
            await server.shutdown()
        }
    }
}
