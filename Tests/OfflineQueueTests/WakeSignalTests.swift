import Foundation
import HTTPCore
import Logging
@testable import OfflineQueue
import ServiceLifecycle
import Testing
import TestSupport

/// Wake-ups for any number of waiters: the signal itself, and the two places that share one
/// (two drains under one `DrainControl`, two services on one queue). Each runs many rounds; a
/// waiter lost or resumed twice shows as a round that never ends (or a crash), which
/// ``finishes(within:_:)`` turns into a failure instead of a hung suite.
@Suite("Wake-ups: many waiters, shared controls, two services")
struct WakeSignalTests {
    @Test("2 and 50 concurrent waiters, with fires, timeouts and cancellations mixed, 200 rounds: each ends its own wait, none is lost", arguments: [2, 50])
    func manyWaiters(_ count: Int) async throws {
        for round in 0..<200 {
            let finished = await finishes(within: .seconds(20)) {
                await Self.round(round, waiters: count)
            }
            #expect(finished, "round \(round) with \(count) waiters ended")
            if !finished { return }
        }
    }

    /// Waiters of three kinds: woken only by the fire, ended by a timeout of their own, ended by
    /// their own cancellation. The last two end without waking the first; the fire wakes all.
    private static func round(_ round: Int, waiters count: Int) async {
        let signal = WakeSignal()
        let mark = signal.mark
        let woken = LockedBox(0)
        var firers: [Task<Void, Never>] = []
        var timed: [Task<Void, Never>] = []
        var cancelled: [Task<Void, Never>] = []
        for index in 0..<count {
            switch (index + round) % 3 {
            case 0:
                firers.append(Task {
                    await signal.wait(after: mark)
                    woken.withLock { $0 += 1 }
                })
            case 1:
                timed.append(Task { await signal.wait(after: mark, timeout: .milliseconds(Int.random(in: 1...3))) })
            default:
                cancelled.append(Task { await signal.wait(after: mark, timeout: .seconds(3600)) })
            }
        }
        if firers.isEmpty { firers.append(Task { await signal.wait(after: mark); woken.withLock { $0 += 1 } }) }
        for task in timed { await task.value }
        for task in cancelled { task.cancel() }
        for task in cancelled { await task.value }
        // What is left parked is the firers', and none of them woke.
        for _ in 0..<10_000 where signal.waiting < firers.count { await Task.yield() }
        #expect(signal.waiting == firers.count)
        #expect(woken.current == 0, "a timeout or a cancellation woke another waiter")
        signal.fire()
        for task in firers { await task.value }
        #expect(woken.current == firers.count)
        #expect(signal.waiting == 0, "no continuation left behind")
    }

    @Test("a fire between the mark and the wait is not lost; a wait after a newer mark waits for the next fire")
    func markBeforeWait() async {
        let signal = WakeSignal()
        let mark = signal.mark
        signal.fire()
        await signal.wait(after: mark)   // returns at once
        let later = signal.mark
        let waiter = Task { await signal.wait(after: later) }
        for _ in 0..<10_000 where signal.waiting < 1 { await Task.yield() }
        #expect(signal.waiting == 1)
        signal.fire()
        await waiter.value
    }

    @Test("two drains sharing one DrainControl both stop, 200 rounds")
    func twoDrainsOneControl() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let gate = Gate()
        server.route("/held") { _, writer in
            await gate.pass()
            try await writer.respond(status: 200)
        }
        let queue = try makeQueue(path: folder.databasePath, server: server, concurrency: 1)
        let url = server.url("/held").absoluteString
        for round in 0..<200 {
            _ = try await queue.enqueue((0..<4).map { _ in QueuedRequest(method: "POST", url: url) })
            gate.close()
            let control = DrainControl()
            let arrived = server.requests.count
            let finished = await finishes(within: .seconds(30)) {
                async let first = try? queue.drain(.untilIdle, concurrency: 1, control: control)
                async let second = try? queue.drain(.untilIdle, concurrency: 1, control: control)
                // Both are sending (each holds one send at the gate) before the stop.
                _ = await eventually(.seconds(10)) { server.requests.count >= arrived + 2 }
                control.stop()
                gate.open()
                let summaries = await [first, second]
                #expect(summaries.allSatisfy { $0 != nil })
            }
            #expect(finished, "round \(round): both drains stopped")
            if !finished { break }
        }
        // Whatever a stop left pending is still there, never lost.
        let counts = try await queue.counts()
        #expect(counts.pending + counts.delivered == 800 && counts.inflight == 0)
        await queue.close()
        await server.shutdown()
    }

    @Test("two services on one queue both deliver what is enqueued and both stop, 200 rounds", arguments: StoreKind.allCases)
    func twoServicesOneQueue(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        defer { Task { await store.remove() } }
        let server = try await TestHTTPServer.start()
        let queue = try await makeQueue(on: store, server: server)
        let url = server.url("/echo").absoluteString
        let rounds = kind == .postgres ? 20 : 200
        for round in 0..<rounds {
            let logger = Logger(label: "test")
            // Polls of an hour: only wake-ups can make either service drain or stop.
            let services = [queue.service(pollInterval: .seconds(3600), logger: logger), queue.service(pollInterval: .seconds(3600), logger: logger)]
            let step = LockedBox("starting")
            // A limit for a hang, not for speed: a loaded machine may take seconds per step.
            let finished = await finishes(within: .seconds(120)) {
                await withTaskGroup(of: Void.self) { group in
                    for service in services { group.addTask { try? await service.run() } }
                    // Both idle in their wait, then one enqueue wakes both.
                    step.withLock { $0 = "both services parked in their wait" }
                    #expect(await eventually(.seconds(60)) { queue.enqueued.waiting >= 2 })
                    step.withLock { $0 = "delivering" }
                    let tickets = (try? await queue.enqueue([QueuedRequest(method: "POST", url: url), QueuedRequest(method: "POST", url: url)])) ?? []
                    #expect(tickets.count == 2)
                    #expect(await eventually(.seconds(60)) { (try? await queue.counts().open) == 0 })
                    step.withLock { $0 = "stopping" }
                    for service in services { service.shutDown() }
                }
            }
            #expect(finished, "round \(round): both services delivered and stopped (stuck: \(step.current))")
            if !finished { break }
        }
        let counts = try await queue.counts()
        #expect(counts.delivered == 2 * rounds && counts.open == 0)
        await queue.close()
        await server.shutdown()
    }
}

/// Whether `body` ends within `limit`. A body that never ends is left behind (its task leaks),
/// so one lost wake-up fails one test instead of hanging the whole run.
func finishes(within limit: Duration, _ body: @escaping @Sendable () async -> Void) async -> Bool {
    let outcome = LockedBox<CheckedContinuation<Bool, Never>?>(nil)
    return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        outcome.withLock { $0 = continuation }
        let finish = { @Sendable (ended: Bool) in outcome.withLock { current in defer { current = nil }; return current }?.resume(returning: ended) }
        let work = Task {
            await body()
            finish(true)
        }
        Task {
            await BootClock.sleep(for: limit)
            finish(false)
            work.cancel()
        }
    }
}

/// Holds requests until opened; closes again for the next round.
final class Gate: Sendable {
    private let signal = WakeSignal()
    private let isOpen = LockedBox(true)

    func close() { isOpen.withLock { $0 = false } }

    func open() {
        isOpen.withLock { $0 = true }
        signal.fire()
    }

    func pass() async {
        while true {
            let mark = signal.mark
            if isOpen.current { return }
            await signal.wait(after: mark)
        }
    }
}
