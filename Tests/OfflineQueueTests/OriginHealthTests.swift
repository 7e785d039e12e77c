import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Origin health (``OriginHealth``) in one process, on the injected clock: circuits that open on
/// an unwell server's answers, probes that cost their entries nothing, a close that makes the
/// backlog due at once, operators' and online calls' view of it. Across `sync run` processes:
/// `OriginHealthProcessTests`.
@Suite("Origin health: a circuit per origin, probed, closed by a delivery")
struct OriginHealthTests {
    /// A loopback origin that answers `status` while `down`, 200 otherwise, counting requests.
    final class Backend: Sendable {
        let down = LockedBox(true)
        let status = LockedBox(500)
        let requests = LockedBox(0)
        let delivered = LockedBox(0)
        let server: TestHTTPServer

        init() async throws {
            server = try await TestHTTPServer.start()
            let (down, status, requests, delivered) = (down, status, requests, delivered)
            server.route("/work") { _, writer in
                requests.withLock { $0 += 1 }
                if down.current {
                    try await writer.respond(status: status.current, body: Data("{\"error\":\"down\"}".utf8))
                } else {
                    delivered.withLock { $0 += 1 }
                    try await writer.respond(status: 200)
                }
            }
        }

        var origin: String { server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }
        func url(_ n: Int) -> String { server.url("/work?n=\(n)").absoluteString }
    }

    static let policy = DeliveryPolicy(backoff: Backoff(base: .seconds(1), cap: .seconds(300)), maxAttempts: 10, maxAge: .seconds(48 * 3600))

    /// Drains, and moves `clock` on to what the drain says is next (a probe, a backoff).
    static func drainAndAdvance(_ queue: OfflineQueue, _ clock: ManualQueueClock) async throws -> DrainSummary {
        let summary = try await queue.drain()
        let now = queue.configuration.clock.now().wall
        let wait = max(0, (summary.nextAttemptAt ?? now.addingTimeInterval(60)).timeIntervalSince(now))
        clock.advance(by: .milliseconds(Int64(wait * 1000) + 1))
        return summary
    }

    @Test("an unwell server opens the circuit: entries spend no attempt while one probe at a time goes; the operator sees it; a delivered probe makes every entry due at once", arguments: StoreKind.allCases)
    func circuitOpensProbesAndCloses(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let backend = try await Backend()
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: backend.server, policy: Self.policy, concurrency: 2) { configuration in
                configuration.clock = clock.queueClock
                configuration.flow.health = OriginHealth(openAfter: 3, probeInterval: .seconds(2), maxProbeInterval: .seconds(8))
            }
            let events = queue.events()
            let watcher = Task { () -> [QueueEvent] in
                var seen: [QueueEvent] = []
                for await event in events {
                    switch event {
                    case .circuitOpened, .circuitClosed: seen.append(event)
                    default: break
                    }
                }
                return seen
            }
            _ = try await QueueRoutes.fill(queue, count: 20) { backend.url($0) }
            // The first drain meets the failures that open the circuit: what it holds goes back.
            _ = try await queue.drain()
            let opened = backend.requests.current
            #expect(opened >= 3 && opened <= 6, "\(kind): \(opened) requests before the circuit held")
            var flow = try #require(try await queue.originFlows().first { $0.origin == backend.origin })
            let circuit = try #require(flow.circuit, "\(kind): \(flow)")
            #expect(circuit.lastError == "HTTP 500" && circuit.failures == opened)
            // Nothing more is sent before the probe is due, whatever drains.
            _ = try await queue.drain()
            #expect(backend.requests.current == opened)
            let countsWhileOpen = try await queue.counts()
            // The entries that failed back off; the rest are due, held by the circuit.
            #expect(countsWhileOpen.due == 0 && countsWhileOpen.heldByFlow == 20 - opened, "\(kind): \(countsWhileOpen)")
            // Each probe is one request, its entry's attempts unchanged.
            let before = try await queue.entries().reduce(0) { $0 + $1.attempts }
            for probe in 1...4 {
                let now = queue.configuration.clock.now().wall
                clock.advance(by: .seconds(max(0, flow.circuit!.nextProbeAt.timeIntervalSince(now)) + 0.01))
                _ = try await queue.drain()
                #expect(backend.requests.current == opened + probe, "\(kind): probe \(probe)")
                flow = try #require(try await queue.originFlows().first { $0.origin == backend.origin })
                #expect(flow.circuit != nil)
            }
            #expect(try await queue.entries().reduce(0) { $0 + $1.attempts } == before, "\(kind): probes cost no attempt")
            #expect(try await queue.counts().dead == 0)
            // The waits grew: 2 s, then 4, 8, 8 (each within a fifth).
            let wait = flow.circuit!.nextProbeAt.timeIntervalSince(queue.configuration.clock.now().wall)
            #expect(wait >= 8 * 0.8 - 0.1 && wait <= 8 * 1.2 + 0.1, "\(kind): next probe in \(wait) s")
            // The server is back: the next probe is delivered, and every entry is due at once.
            backend.down.withLock { $0 = false }
            clock.advance(by: .seconds(wait + 0.01))
            let summary = try await queue.drain()
            #expect(summary.delivered == 20, "\(kind): \(summary)")
            #expect(backend.delivered.current == 20)
            #expect(try await queue.originFlows().allSatisfy { $0.circuit == nil && $0.failures == 0 })
            await queue.close()
            let seen = await Task { () -> [QueueEvent] in
                watcher.cancel()
                return await watcher.value
            }.value
            #expect(seen == [.circuitOpened(origin: backend.origin, error: "HTTP 500"), .circuitClosed(origin: backend.origin)], "\(kind): \(seen)")
            await backend.server.shutdown()
        }
    }

    @Test("the operator closes a circuit: the origin's entries are due at once; an online call through the queue's gate fails fast meanwhile, and send stores it when asked to", arguments: StoreKind.allCases)
    func operatorAndOnlineCalls(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let backend = try await Backend()
            backend.status.withLock { $0 = 503 }
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: backend.server, policy: Self.policy, concurrency: 1) { configuration in
                configuration.clock = clock.queueClock
                configuration.flow.health = OriginHealth(openAfter: 2, probeInterval: .seconds(30), storesWhileOpen: true)
            }
            _ = try await QueueRoutes.fill(queue, count: 5) { backend.url($0) }
            _ = try await queue.drain()
            let sent = backend.requests.current
            #expect(try await queue.originFlows().first?.circuit?.lastError == "HTTP 503", "\(kind): a 503 without Retry-After counts")
            // An app's own client with the queue's gate: refused before anything is sent.
            var online = ClientConfiguration(baseURL: backend.server.baseURL, timeout: .hangGuard)
            online.plugins = [queue.circuitGate()]
            let app = APIClient(configuration: online, transport: sharedTransport)
            await #expect {
                _ = try await app.data(Request<Data>.get("/work?n=online"))
            } throws: { error in
                guard let error = error as? NetworkError, case .underlying(let cause) = error, let refused = cause as? OriginHealth.CircuitOpen else { return false }
                return refused.origin == backend.origin && refused.circuit.lastError == "HTTP 503"
            }
            // Through the queue: stored at once, as when the network is gone.
            let outcome = try await queue.send(Request<Data>.post("/work?n=sent", body: Data("{}".utf8)))
            guard case .queued = outcome else {
                Issue.record("\(kind): \(outcome)")
                return
            }
            #expect(backend.requests.current == sent, "\(kind): nothing reached the unwell server")
            // The operator closes the circuit: every entry due now, delivered by the next drain.
            backend.down.withLock { $0 = false }
            #expect(try await queue.resume(origin: backend.origin))
            #expect(try await queue.counts().due == 6)
            #expect(try await queue.drain().delivered == 6)
            // The gate's view follows at once in this process.
            _ = try await app.data(Request<Data>.get("/work?n=online"))
            await queue.close()
            await backend.server.shutdown()
        }
    }

    @Test("after a 429 with Retry-After, only what was on the wire reaches the server: a drain at concurrency 32 over 8 HTTP/1.1 connections sends 8, not 32; the rest go back unsent", arguments: [StoreKind.sqlite, .memory])
    func pauseSendsOnlyWhatIsOnTheWire(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let requests = LockedBox(0)
            server.route("/work") { _, writer in
                requests.withLock { $0 += 1 }
                // Slow enough that every connection is busy when the first answer comes.
                try? await Task.sleep(for: .milliseconds(50))
                try await writer.respond(status: 429, headers: [HeaderField(name: "Retry-After", value: "30")])
            }
            // The shared AsyncHTTPClient transport: 8 connections per host, the default.
            let queue = try await makeQueue(on: store, server: server, concurrency: 32)
            _ = try await QueueRoutes.fill(queue, count: 200) { server.url("/work?n=\($0)").absoluteString }
            let summary = try await queue.drain()
            let sent = requests.current
            print("origin health, \(kind): \(sent) requests after a 429 with Retry-After at concurrency 32 (\(summary))")
            #expect(sent >= 1 && sent <= 8, "\(kind): \(sent) requests reached the server")
            let counts = try await queue.counts()
            #expect(counts.pending == 200 && counts.dead == 0, "\(kind): \(counts)")
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("a flaky server (one request in ten fails) never opens the circuit with the defaults", arguments: [StoreKind.sqlite, .memory])
    func flakyServerNeverOpens(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let calls = LockedBox(0)
            server.route("/flaky") { _, writer in
                let call = calls.withLock { count -> Int in
                    count += 1
                    return count
                }
                try await writer.respond(status: call % 10 == 0 ? 502 : 200)
            }
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: server, policy: Self.policy) { $0.clock = clock.queueClock }
            let events = queue.events()
            let watcher = Task { () -> Int in
                var opened = 0
                for await event in events { if case .circuitOpened = event { opened += 1 } }
                return opened
            }
            _ = try await QueueRoutes.fill(queue, count: 400) { server.url("/flaky?n=\($0)").absoluteString }
            try await drainUntilSettled(queue, advancing: clock)
            #expect(try await queue.counts().delivered == 400)
            await queue.close()
            watcher.cancel()
            #expect(await watcher.value == 0, "\(kind): a circuit opened")
            #expect(calls.current >= 440)
            await server.shutdown()
        }
    }

    @Test("a 24-hour outage of one origin with 10,000 waiting entries costs it about 1,500 requests (a probe a minute), while a second origin's entries flow throughout; none dead, each delivered once after it")
    func dayLongOutage() async throws {
        let store = try TestStore(.sqlite)
        try await removing(store) {
            let backend = try await Backend()
            let other = try await Backend()
            other.down.withLock { $0 = false }
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: backend.server, policy: Self.policy) { configuration in
                configuration.clock = clock.queueClock
                // Probes from 2 s: longer than a drain waits for a held origin, so each drain
                // ends and this test moves the clock to the next probe.
                configuration.flow.health = OriginHealth(probeInterval: .seconds(2))
            }
            let waiting = 10_000
            _ = try await QueueRoutes.fill(queue, count: waiting) { backend.url($0) }
            let start = queue.configuration.clock.now().wall
            var hour = 0
            var drains = 0
            while queue.configuration.clock.now().wall.timeIntervalSince(start) < 24 * 3600 {
                let elapsed = Int(queue.configuration.clock.now().wall.timeIntervalSince(start))
                if elapsed / 3600 >= hour {
                    // Each hour, the second origin gets work: it flows at once.
                    _ = try await QueueRoutes.fill(queue, count: 5) { other.url(hour * 10 + $0) }
                    hour += 1
                }
                _ = try await Self.drainAndAdvance(queue, clock)
                drains += 1
                #expect(other.delivered.current == 5 * hour, "hour \(hour): \(other.delivered.current) of the other origin's delivered")
                if other.delivered.current != 5 * hour { break }
            }
            let requests = backend.requests.current
            print("origin health, a day-long outage: \(requests) requests to the unwell origin over \(drains) drains")
            #expect(requests >= 1_400 && requests <= 1_600, "\(requests) requests in 24 h")
            backend.down.withLock { $0 = false }
            try await drainUntilSettled(queue, advancing: clock, rounds: 200)
            let counts = try await queue.counts()
            #expect(counts.delivered == waiting + 5 * hour && counts.dead == 0, "\(counts)")
            #expect(backend.delivered.current == waiting, "each delivered once")
            await queue.close()
            await backend.server.shutdown()
            await other.server.shutdown()
        }
    }
}
