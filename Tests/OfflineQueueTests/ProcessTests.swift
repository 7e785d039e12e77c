import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Drainers in other processes: killed with SIGKILL at random moments, or three at once on one
/// file. The server (this process) records every idempotency key it receives.
@Suite("Other processes: SIGKILL and concurrent drainers", .serialized)
struct ProcessTests {
    static func startAgent(_ path: String, leaseMilliseconds: Int, concurrency: Int = 16) throws -> ChildProcess {
        try Agent.start(path, leaseMilliseconds: leaseMilliseconds, concurrency: concurrency).process
    }

    /// A queue-agent whose output is kept, for the failure message of a test that needs it to
    /// end well.
    struct Agent {
        let process: ChildProcess
        private let stdout: Task<Data, Never>
        private let stderr: Task<Data, Never>

        /// Starts `queue-agent path`. Its time limit is a hang guard: it exits as soon as
        /// nothing is open.
        static func start(_ path: String, leaseMilliseconds: Int, concurrency: Int = 16) throws -> Agent {
            let process = ChildProcess()
            process.executableURL = try builtProduct(named: "queue-agent")
            process.arguments = [
                path, "--concurrency", String(concurrency), "--lease-ms", String(leaseMilliseconds),
                "--limit-seconds", String(Duration.hangGuard.components.seconds),
            ]
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            return Agent(process: process, stdout: readToEnd(out.fileHandleForReading), stderr: readToEnd(err.fileHandleForReading))
        }

        /// Waits for the agent to end; its exit status and what it printed.
        func ended() async -> (status: Int32, output: String) {
            await process.exited()
            let text = String(decoding: await stdout.value, as: UTF8.self) + String(decoding: await stderr.value, as: UTF8.self)
            return (process.terminationStatus, text)
        }
    }

    /// Runs `body` for SQLite and PostgreSQL at once: the suite runs its tests one at a time,
    /// and its two longest (kills for 20 rounds, chaos for a minute) need not take their
    /// length twice. Each store has its own queue, server and agents.
    static func onSharedStores(_ body: @escaping @Sendable (StoreKind) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for kind in StoreKind.shared { group.addTask { try await body(kind) } }
            try await group.waitForAll()
        }
    }

    @Test("a drainer killed with SIGKILL at random moments, 20 rounds, on SQLite and PostgreSQL at once: the next drain takes its entries back at once, every entry arrives, the file is sound")
    func killTest() async throws {
        try await Self.onSharedStores(Self.killRounds)
    }

    static func killRounds(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keys = QueueRoutes.counting(server, "/kill", hold: .milliseconds(5))
            let queue = try await makeQueue(on: store, server: server)
            let total = 3000
            let tickets = try await QueueRoutes.fill(queue, count: total) { server.url("/kill?n=\($0)").absoluteString }

            var generator = SeededGenerator(seed: 20261123)
            var progress: [Int] = []
            var heldAtKill: [Int] = []
            for round in 0..<20 {
                // Leases of five minutes: only owner liveness can hand the entries back in time.
                let agent = try Self.startAgent(store.path, leaseMilliseconds: 300_000)
                // Killed mid-drain, however long the agent takes to start on a loaded machine: once
                // it holds entries of its own (claimed by a live owner), at a random moment after.
                let draining = try await eventually {
                    let counts = try await queue.counts()
                    return counts.inflight > counts.inflightOrphaned || counts.open == 0 || !agent.isRunning
                }
                #expect(draining, "\(kind), round \(round): the agent claimed entries within the hang guard")
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...100, using: &generator)))
                agent.signal(SIGKILL)
                await agent.exited()
                #expect(agent.terminationReason == .uncaughtSignal, "\(kind)")
                var counts = try await queue.counts()
                // PostgreSQL frees a dead client's advisory lock when the client's backend sees its
                // socket close: a moment after the kill (longer on a loaded machine), not at it.
                if kind == .postgres {
                    _ = try await eventually {
                        counts = try await queue.counts()
                        return counts.inflightOrphaned == counts.inflight
                    }
                }
                #expect(counts.inflightOrphaned == counts.inflight, "\(kind): whatever the killed agent held is known to be orphaned")
                progress.append(counts.delivered)
                heldAtKill.append(counts.inflightOrphaned)
                if counts.open == 0 { break }
            }
            print("\(kind): delivered after each kill: \(progress)")
            print("\(kind): held by the agent at each kill: \(heldAtKill)")
            #expect(heldAtKill.filter { $0 > 0 }.count >= 10, "\(kind): most kills landed mid-drain, with entries in flight")

            // No wait for any lease: one drain takes back what the last agent held and delivers it.
            let final = try await queue.drain()
            print("\(kind): taken back by the final drain: \(final.reclaimed)")
            let counts = try await queue.counts()
            #expect(counts.delivered == total, "\(kind)")
            #expect(counts.open == 0, "\(kind)")
            let seen = keys.current
            #expect(seen.count == total, "\(kind): the server's deduplicated count equals the number enqueued")
            #expect(Set(seen.keys) == Set(tickets.map(\.idempotencyKey)), "\(kind): every entry reached the server at least once")
            let duplicates = seen.values.reduce(0) { $0 + $1 - 1 }
            print("\(kind): sent more than once (at-least-once after kills): \(duplicates)")
            #expect(try await queue.integrityCheck() == ["ok"], "\(kind)")
            await server.shutdown()
        }
    }

    @Test("three drainer processes killed and restarted at random for a minute, on SQLite and PostgreSQL at once: nothing pending, nothing in flight, nothing lost")
    func chaos() async throws {
        try await Self.onSharedStores(Self.chaosMinute)
    }

    static func chaosMinute(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keys = QueueRoutes.counting(server, "/chaos", hold: .milliseconds(20))
            let queue = try await makeQueue(on: store, server: server)
            let total = 4000
            let tickets = try await QueueRoutes.fill(queue, count: total) { server.url("/chaos?n=\($0)").absoluteString }
            var generator = SeededGenerator(seed: 1123)
            var agents = try (0..<3).map { _ in try Self.startAgent(store.path, leaseMilliseconds: 300_000, concurrency: 4) }
            var kills = 0
            let end = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < end {
                try await Task.sleep(for: .milliseconds(Int.random(in: 100...600, using: &generator)))
                let victim = Int.random(in: 0..<agents.count, using: &generator)
                if agents[victim].isRunning {
                    agents[victim].signal(SIGKILL)
                    kills += 1
                }
                await agents[victim].exited()
                if try await queue.counts().open > 0 {
                    agents[victim] = try Self.startAgent(store.path, leaseMilliseconds: 300_000, concurrency: 4)
                }
            }
            for agent in agents where agent.isRunning { agent.signal(SIGKILL) }
            for agent in agents { await agent.exited() }
            print("\(kind): chaos: \(kills) kills in a minute")
            try await drainUntilSettled(queue, rounds: 50)
            let counts = try await queue.counts()
            #expect(counts.pending == 0, "\(kind)")
            #expect(counts.inflight == 0, "\(kind)")
            #expect(counts.delivered == total, "\(kind)")
            #expect(Set(keys.current.keys) == Set(tickets.map(\.idempotencyKey)), "\(kind): every entry reached the server")
            #expect(try await queue.integrityCheck() == ["ok"], "\(kind)")
            await server.shutdown()
        }
    }

    @Test("four processes draining one queue: every entry delivered, none sent twice under a valid lease", arguments: StoreKind.shared)
    func threeDrainers(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let keys = QueueRoutes.counting(server, "/shared", hold: .milliseconds(2))
            let queue = try await makeQueue(on: store, server: server)
            let total = 1500
            let began = ContinuousClock.now
            let tickets = try await QueueRoutes.fill(queue, count: total) { server.url("/shared?n=\($0)").absoluteString }
            let filled = ContinuousClock.now
            let agents = try (0..<4).map { _ in try Agent.start(store.path, leaseMilliseconds: 60_000, concurrency: 8) }
            for (index, agent) in agents.enumerated() {
                let (status, output) = await agent.ended()
                #expect(status == 0, "agent \(index) exited \(status): \(output)")
                print("four processes, \(kind): agent \(index) ended \(ContinuousClock.now - filled) after the fill (\(filled - began)): \(output)")
            }
            let seen = keys.current
            #expect(seen.count == total)
            #expect(seen.values.allSatisfy { $0 == 1 }, "no entry sent twice while its lease was valid")
            #expect(Set(seen.keys) == Set(tickets.map(\.idempotencyKey)))
            #expect(try await queue.counts().delivered == total)
            #expect(try await queue.integrityCheck() == ["ok"])
            await server.shutdown()
        }
    }

    @Test("four processes draining chains of entries that wait for each other: each step arrives after the one it waits for, whatever its priority, and none twice", arguments: StoreKind.shared)
    func chains(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let arrivals = LockedBox([String]())
            server.route("/step") { request, writer in
                try await Task.sleep(for: .milliseconds(2))
                arrivals.withLock { $0.append(request.queryValue("s") ?? "?") }
                try await writer.respond(status: 201)
            }
            let queue = try await makeQueue(on: store, server: server)
            let chains = 100, steps = 3
            // Each step a transaction of its own, at a higher priority than the step it waits for.
            var previous: [Ticket] = []
            for step in 0..<steps {
                previous = try await queue.enqueue((0..<chains).map { chain in
                    QueuedRequest(
                        method: "POST", url: server.url("/step?s=\(chain).\(step)").absoluteString,
                        options: EnqueueOptions(priority: step * 5, after: step == 0 ? [] : [previous[chain].id])
                    )
                })
            }
            #expect(try await queue.counts().blocked == chains * (steps - 1))
            let agents = try (0..<4).map { _ in try Agent.start(store.path, leaseMilliseconds: 60_000, concurrency: 8) }
            for (index, agent) in agents.enumerated() {
                let (status, output) = await agent.ended()
                #expect(status == 0, "agent \(index) exited \(status): \(output)")
            }
            let order = arrivals.current
            #expect(order.count == chains * steps && Set(order).count == order.count, "every step sent, none twice")
            let position = Dictionary(order.enumerated().map { ($1, $0) }) { first, _ in first }
            for chain in 0..<chains {
                let at = (0..<steps).map { position["\(chain).\($0)"] ?? -1 }
                #expect(at == at.sorted() && !at.contains(-1), "chain \(chain) arrived as \(at)")
            }
            let counts = try await queue.counts()
            #expect(counts.delivered == chains * steps && counts.open == 0)
            await server.shutdown()
        }
    }

    @Test("children enqueued while four processes deliver their parents (pending, in flight or delivered by then): none is left blocked, each arrives after its parent", arguments: StoreKind.shared)
    func childrenDuringDelivery(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let arrivals = LockedBox([String]())
            server.route("/step") { request, writer in
                try await Task.sleep(for: .milliseconds(3))
                arrivals.withLock { $0.append(request.queryValue("s") ?? "?") }
                try await writer.respond(status: 201)
            }
            let queue = try await makeQueue(on: store, server: server)
            let total = 300
            let parents = try await queue.enqueue((0..<total).map { QueuedRequest(method: "POST", url: server.url("/step?s=p\($0)").absoluteString) })
            let agents = try (0..<4).map { _ in try Agent.start(store.path, leaseMilliseconds: 60_000, concurrency: 8) }
            // One child per parent, each its own transaction, racing the agents' settlements.
            for (index, parent) in parents.enumerated() {
                _ = try await queue.enqueue([QueuedRequest(
                    method: "POST", url: server.url("/step?s=c\(index)").absoluteString, options: EnqueueOptions(after: [parent.id])
                )])
            }
            for (index, agent) in agents.enumerated() {
                let (status, output) = await agent.ended()
                #expect(status == 0, "agent \(index) exited \(status): \(output)")
            }
            // Agents that found nothing open before the last children came in have left them.
            _ = try await drainUntilSettled(queue)
            let counts = try await queue.counts()
            #expect(counts.blocked == 0 && counts.pending == 0, "no child left waiting for a parent delivered meanwhile")
            #expect(counts.delivered == 2 * total)
            let order = arrivals.current
            #expect(order.count == 2 * total && Set(order).count == order.count, "every entry sent, none twice")
            let position = Dictionary(order.enumerated().map { ($1, $0) }) { first, _ in first }
            for index in 0..<total {
                #expect((position["p\(index)"] ?? .max) < (position["c\(index)"] ?? -1), "child \(index) after its parent")
            }
            await server.shutdown()
        }
    }

    @Test("a live drainer renews its leases: a send longer than the lease is not taken over (injected clock, no sleeping)", arguments: StoreKind.allCases)
    func leaseRenewal(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let (arrived, release) = QueueRoutes.holding(server, "/long")
            let clock = ManualQueueClock()
            let policy = DeliveryPolicy(leaseDuration: .milliseconds(400))
            let first = try await makeQueue(on: store, server: server, policy: policy) { $0.clock = clock.queueClock }
            let second = try await makeQueue(on: store, server: server, policy: policy) { $0.clock = clock.queueClock }
            let ticket = try await first.enqueue(method: "PUT", url: server.url("/long").absoluteString)
            let long = Task { try await first.drain() }
            #expect(await eventually { arrived.current == 1 && clock.sleepers == 1 }, "the send is under way and its renewal timer set")
            // Two and a half lease lengths pass in steps; each step past half a lease wakes the
            // drain's renewal timer, which renews and sets the next one.
            for _ in 0..<10 {
                clock.advance(by: .milliseconds(100))
                #expect(await eventually { clock.sleepers == 1 })
            }
            let other = try await second.drain()
            #expect(other.delivered == 0, "the entry was still leased")
            #expect(other.inflightElsewhere == 1)
            release.withLock { $0 = true }
            let summary = try await long.value
            #expect(summary.delivered == 1)
            #expect(summary.leasesLost == 0)
            #expect(idempotencyKeys(server) == [ticket.idempotencyKey], "sent once")
            await server.shutdown()
        }
    }

    @Test("an expired lease returns the entry: another drainer takes it, and the first one's late result is not recorded (injected clock)", arguments: StoreKind.allCases)
    func leaseExpiry(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let (arrived, release) = QueueRoutes.holding(server, "/slow-once", held: 1)
            let clock = ManualQueueClock()
            var hung = DeliveryPolicy(leaseDuration: .milliseconds(300))
            hung.renewsLeases = false   // a drainer that hangs without dying: its lease lapses
            let first = try await makeQueue(on: store, server: server, policy: hung) { $0.clock = clock.queueClock }
            let second = try await makeQueue(on: store, server: server, policy: DeliveryPolicy(leaseDuration: .milliseconds(300))) {
                $0.clock = clock.queueClock
            }
            let ticket = try await first.enqueue(method: "POST", url: server.url("/slow-once").absoluteString)
            let slow = Task { try await first.drain() }
            #expect(await eventually { arrived.current == 1 })
            clock.advance(by: .milliseconds(500))
            let fast = try await second.drain()
            #expect(fast.delivered == 1)
            release.withLock { $0 = true }
            let late = try await slow.value
            #expect(late.leasesLost == 1)
            #expect(late.delivered == 0)
            #expect(idempotencyKeys(server) == [ticket.idempotencyKey, ticket.idempotencyKey])
            let entry = try #require(try await first.entry(ticket.id))
            #expect(entry.state == .delivered)
            #expect(entry.attempts == 1)
            await server.shutdown()
        }
    }
}
