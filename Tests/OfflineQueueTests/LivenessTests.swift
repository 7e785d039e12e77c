import Foundation
import HTTPCore
import Logging
@testable import OfflineQueue
@testable import OfflineQueueCore
import QueueTestSupport
import Testing
import TestSupport

/// The watchdog's verdict, judged at chosen moments of a manual clock: what counts as stuck,
/// and what does not.
@Suite("Liveness: what a watchdog calls stuck")
struct LivenessTests {
    let storeLimit = Duration.seconds(30)
    let idleLimit = Duration.seconds(10)
    let clock = ManualQueueClock()
    var now: Double { clock.queueClock.now().uptime }

    @Test("a send within its timeout and margin is alive; past them, stuck, naming the entry; alive again once it ends")
    func sends() {
        let watch = ServiceWatch(clock: clock.queueClock)
        let start = now
        watch.sendBegan(42, timeout: .seconds(60), margin: .seconds(5))
        #expect(watch.liveness(at: start + 64, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive, "long but within its timeout")
        let late = watch.liveness(at: start + 66, storeCallLimit: storeLimit, idleLimit: idleLimit)
        #expect(!late.isAlive)
        #expect(late.reason?.contains("entry 42") == true, "\(late)")
        watch.sendEnded(42)
        #expect(watch.liveness(at: now, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
    }

    @Test("a store call past its limit is stuck, naming the call; one within it is not")
    func storeCalls() {
        let watch = ServiceWatch(clock: clock.queueClock)
        let start = now
        let call = watch.storeCallBegan(.claim)
        #expect(watch.liveness(at: start + 29, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        let stuck = watch.liveness(at: start + 31, storeCallLimit: storeLimit, idleLimit: idleLimit)
        #expect(stuck.reason?.contains("settle and claim") == true, "\(stuck)")
        watch.storeCallEnded(call)
        #expect(watch.liveness(at: now, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
    }

    @Test("nothing under way and nothing moved past the idle limit is a wedged loop; a turn of the loop clears it")
    func idleLoop() {
        let watch = ServiceWatch(clock: clock.queueClock)
        let start = now
        #expect(watch.liveness(at: start + 9, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        #expect(!watch.liveness(at: start + 11, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        // Work under way is judged by its own limits, not by the loop.
        watch.sendBegan(1, timeout: .seconds(60), margin: .seconds(5))
        #expect(watch.liveness(at: start + 30, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        watch.sendEnded(1)
        watch.progressed()
        #expect(watch.liveness(at: now + 1, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
    }
}

/// The shared counts: readers at once share one read; within the age limit none reads again.
@Suite("Counts read once a second, shared")
struct CountsCacheTests {
    @Test("50 readers at once make one read; a reader within the age limit makes none; one after it makes one")
    func shared() async throws {
        let clock = ManualQueueClock()
        let cache = CountsCache(clock: clock.queueClock)
        let reads = LockedBox(0)
        let gate = WakeSignal()
        let mark = gate.mark
        let read: @Sendable () async -> Result<QueueCounts, QueueError> = {
            reads.withLock { $0 += 1 }
            await gate.wait(after: mark)
            return .success(QueueCounts(pending: 7))
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { try await cache.counts(maxAge: .seconds(60), read: read).pending } }
            #expect(await eventually { reads.current > 0 }, "the first reader is reading")
            gate.fire()
            for try await pending in group { #expect(pending == 7) }
        }
        #expect(reads.current == 1)
        _ = try await cache.counts(maxAge: .seconds(60), read: read)
        #expect(reads.current == 1, "fresh enough: no read")
        clock.advance(by: .seconds(61))
        _ = try await cache.counts(maxAge: .seconds(60), read: read)
        #expect(reads.current == 2, "too old: one more read")
    }
}

/// Liveness and the shared counts read the queue's clock (``QueueConfiguration/clock``), not the
/// boot clock beside it: moving a manual clock moves them, and real time does not.
@Suite("Liveness and the counts cache on the queue's clock")
struct QueueClockReadsTests {
    @Test("the watch ages sends, store calls and the idle loop on the clock it is given")
    func watch() {
        let clock = ManualQueueClock()
        let watch = ServiceWatch(clock: clock.queueClock)
        let limits = (store: Duration.seconds(30), idle: Duration.seconds(10))
        func verdict() -> ServiceLiveness { watch.liveness(at: clock.queueClock.now().uptime, storeCallLimit: limits.store, idleLimit: limits.idle) }
        watch.sendBegan(7, timeout: .seconds(60), margin: .seconds(5))
        clock.advance(by: .seconds(64))
        #expect(verdict().isAlive, "within its timeout and margin on the manual clock")
        clock.advance(by: .seconds(2))
        #expect(verdict().reason?.contains("entry 7") == true, "\(verdict())")
        watch.sendEnded(7)
        #expect(verdict().isAlive, "the end of the send is progress, at the manual clock's reading")
        let call = watch.storeCallBegan(.counts)
        clock.advance(by: .seconds(31))
        #expect(verdict().reason?.contains("counts") == true, "\(verdict())")
        watch.storeCallEnded(call)
        clock.advance(by: .seconds(9))
        #expect(verdict().isAlive)
        clock.advance(by: .seconds(2))
        #expect(verdict().reason?.contains("service loop") == true, "\(verdict())")
        watch.progressed()
        #expect(verdict().isAlive)
    }

    @Test("a service whose loop never turns is stuck once the queue's clock passes the poll and its margin, and not before")
    func serviceLiveness() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let clock = ManualQueueClock()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.clock = clock.queueClock }
        // Not run: nothing under way and the loop never goes round, so only the clock decides.
        let service = queue.service(pollInterval: .seconds(60), logger: Logger(label: "test"))
        #expect(service.liveness().isAlive)
        clock.advance(by: .seconds(60) + QueueService.loopMargin - .seconds(1))
        #expect(service.liveness().isAlive, "within the poll and its margin on the queue's clock")
        clock.advance(by: .seconds(2))
        let stuck = service.liveness()
        #expect(!stuck.isAlive, "past them on the queue's clock, however little real time went by")
        #expect(stuck.reason?.contains("service loop") == true, "\(stuck)")
        await server.shutdown()
    }

    @Test("recentCounts keeps its counts until the queue's clock says they are older than maxAge")
    func countsCache() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let clock = ManualQueueClock()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.clock = clock.queueClock }
        #expect(try await queue.recentCounts(maxAge: .seconds(60)).pending == 0)
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        #expect(try await queue.recentCounts(maxAge: .seconds(60)).pending == 0, "kept: the queue's clock has not moved")
        clock.advance(by: .seconds(59))
        #expect(try await queue.recentCounts(maxAge: .seconds(60)).pending == 0, "kept: 59 s old on the queue's clock")
        clock.advance(by: .seconds(2))
        #expect(try await queue.recentCounts(maxAge: .seconds(60)).pending == 1, "read again: 61 s old on the queue's clock")
        await server.shutdown()
    }
}
