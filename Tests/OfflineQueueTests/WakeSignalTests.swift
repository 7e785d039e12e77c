import Foundation
import HTTPCore
import Logging
@testable import OfflineQueue
@testable import OfflineQueueCore
import ServiceLifecycle
import QueueTestSupport
import Testing
import TestSupport

/// Wake-ups for any number of waiters: the signal itself, and the two places that share one
/// (two drains under one `DrainControl`, two services on one queue). Each runs many rounds; a
/// waiter lost or resumed twice shows as a round that never ends (or a crash), which a
/// ``ProgressGuard`` turns into a failure instead of a hung suite. The guard judges progress,
/// not time: beside a busy loop and the whole suite, a round of 50 waiters took over 20 s, and
/// was only slow; a lost wake-up stops the rounds for good.
@Suite("Wake-ups: many waiters, shared controls, two services")
struct WakeSignalTests {
    @Test("2 and 50 concurrent waiters, with fires, timeouts and cancellations mixed, 200 rounds: each ends its own wait, none is lost", arguments: [2, 50])
    func manyWaiters(_ count: Int) async throws {
        let (ended, watch) = await ProgressGuard.run { watch in
            for round in 0..<200 {
                watch.progressed("round \(round)")
                await Self.round(round, waiters: count)
            }
        }
        #expect(ended, "\(watch.step) with \(count) waiters never ended")
        print("\(count) waiters, 200 rounds: the longest, \(watch.longest.step), took \(watch.longest.duration)")
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
        #expect(await eventually { signal.waiting >= firers.count }, "every firer parked")
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
        #expect(await eventually { signal.waiting >= 1 })
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
        let (ended, watch) = await ProgressGuard.run { watch in
            for round in 0..<200 {
                watch.progressed("round \(round): enqueueing")
                // A drain claims ahead of its sends (up to three rounds of its concurrency, one
                // commit for several entries): enough for both, or the first takes them all and
                // the second has nothing to send.
                do { _ = try await queue.enqueue((0..<16).map { _ in QueuedRequest(method: "POST", url: url) }) } catch {
                    Issue.record(error, "round \(round): enqueue")
                    return
                }
                gate.close()
                let control = DrainControl()
                let arrived = server.requests.count
                async let first = try? queue.drain(.untilIdle, concurrency: 1, control: control)
                async let second = try? queue.drain(.untilIdle, concurrency: 1, control: control)
                // Both are sending (each holds one send at the gate) before the stop.
                watch.progressed("round \(round): both drains sending")
                #expect(await eventually { server.requests.count >= arrived + 2 }, "round \(round): both drains send")
                control.stop()
                gate.open()
                watch.progressed("round \(round): both drains stopping")
                let summaries = await [first, second]
                #expect(summaries.allSatisfy { $0 != nil })
            }
        }
        #expect(ended, "\(watch.step) never ended")
        print("two drains, one control, 200 rounds: the longest step, \(watch.longest.step), took \(watch.longest.duration)")
        // Whatever a stop left pending is still there, never lost.
        let counts = try await queue.counts()
        #expect(counts.pending + counts.delivered == 3200 && counts.inflight == 0)
        await queue.close()
        await server.shutdown()
    }

    @Test("two services on one queue both deliver what is enqueued and both stop, 200 rounds", arguments: StoreKind.allCases)
    func twoServicesOneQueue(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            let url = server.url("/echo").absoluteString
            let rounds = kind == .postgres ? 20 : 200
            let (ended, watch) = await ProgressGuard.run { watch in
                for round in 0..<rounds {
                    let logger = Logger(label: "test")
                    // Polls of an hour: only wake-ups can make either service drain or stop.
                    let services = [queue.service(pollInterval: .seconds(3600), logger: logger), queue.service(pollInterval: .seconds(3600), logger: logger)]
                    await withTaskGroup(of: Void.self) { group in
                        for service in services { group.addTask { try? await service.run() } }
                        // Both idle in their wait, then one enqueue wakes both.
                        watch.progressed("round \(round): both services parked in their wait")
                        #expect(await eventually { queue.enqueued.waiting >= 2 })
                        watch.progressed("round \(round): delivering")
                        let tickets = (try? await queue.enqueue([QueuedRequest(method: "POST", url: url), QueuedRequest(method: "POST", url: url)])) ?? []
                        #expect(tickets.count == 2)
                        #expect(await eventually { (try? await queue.counts().open) == 0 })
                        watch.progressed("round \(round): stopping")
                        for service in services { service.shutDown() }
                    }
                }
            }
            #expect(ended, "\(watch.step) never ended")
            print("two services on \(kind), \(rounds) rounds: the longest step, \(watch.longest.step), took \(watch.longest.duration)")
            let counts = try await queue.counts()
            #expect(counts.delivered == 2 * rounds && counts.open == 0)
            await queue.close()
            await server.shutdown()
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
