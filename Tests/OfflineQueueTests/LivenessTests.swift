import HTTPCore
@testable import OfflineQueue
@testable import OfflineQueueCore
import QueueTestSupport
import Testing
import TestSupport

/// The watchdog's verdict, judged at chosen moments: what counts as stuck, and what does not.
@Suite("Liveness: what a watchdog calls stuck")
struct LivenessTests {
    let storeLimit = Duration.seconds(30)
    let idleLimit = Duration.seconds(10)

    @Test("a send within its timeout and margin is alive; past them, stuck, naming the entry; alive again once it ends")
    func sends() {
        let watch = ServiceWatch()
        let start = BootClock.uptime()
        watch.sendBegan(42, timeout: .seconds(60), margin: .seconds(5))
        #expect(watch.liveness(at: start + 64, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive, "long but within its timeout")
        let late = watch.liveness(at: start + 66, storeCallLimit: storeLimit, idleLimit: idleLimit)
        #expect(!late.isAlive)
        #expect(late.reason?.contains("entry 42") == true, "\(late)")
        watch.sendEnded(42)
        #expect(watch.liveness(at: BootClock.uptime(), storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
    }

    @Test("a store call past its limit is stuck, naming the call; one within it is not")
    func storeCalls() {
        let watch = ServiceWatch()
        let start = BootClock.uptime()
        let call = watch.storeCallBegan(.claim)
        #expect(watch.liveness(at: start + 29, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        let stuck = watch.liveness(at: start + 31, storeCallLimit: storeLimit, idleLimit: idleLimit)
        #expect(stuck.reason?.contains("settle and claim") == true, "\(stuck)")
        watch.storeCallEnded(call)
        #expect(watch.liveness(at: BootClock.uptime(), storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
    }

    @Test("nothing under way and nothing moved past the idle limit is a wedged loop; a turn of the loop clears it")
    func idleLoop() {
        let watch = ServiceWatch()
        let start = BootClock.uptime()
        #expect(watch.liveness(at: start + 9, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        #expect(!watch.liveness(at: start + 11, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        // Work under way is judged by its own limits, not by the loop.
        watch.sendBegan(1, timeout: .seconds(60), margin: .seconds(5))
        #expect(watch.liveness(at: start + 30, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
        watch.sendEnded(1)
        watch.progressed()
        #expect(watch.liveness(at: BootClock.uptime() + 1, storeCallLimit: storeLimit, idleLimit: idleLimit).isAlive)
    }
}

/// The shared counts: readers at once share one read; within the age limit none reads again.
@Suite("Counts read once a second, shared")
struct CountsCacheTests {
    @Test("50 readers at once make one read; a reader within the age limit makes none; one after it makes one")
    func shared() async throws {
        let cache = CountsCache()
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
        _ = try await cache.counts(maxAge: .zero, read: read)
        #expect(reads.current == 2, "too old: one more read")
    }
}
