import Foundation
import HTTPCore
@testable import OfflineQueue
@testable import OfflineQueueCore
import QueueTestSupport
import Testing

/// Events published while subscribers are cancelled: a yield takes the subscriber task's status
/// lock, a cancellation holds it and ends in the broadcast's own lock, so publishing under that
/// lock could block both threads of the cooperative pool for good (seen in a full test run
/// beside a busy loop: every drain and service of the process stopped).
@Suite("EventBroadcast: publishing and cancelling at once")
struct EventBroadcastTests {
    @Test("subscribers cancelled while events are published, 1,000 rounds: nothing blocks")
    func publishWhileCancelling() async {
        let broadcast = EventBroadcast()
        // A hang would take the cooperative pool with it, and any timeout running on it: a
        // thread of its own ends the process with the reason instead of letting it hang.
        let watchdog = HangWatchdog(limit: 120, what: "EventBroadcast: publish and cancel deadlocked")
        defer { watchdog.disarm() }
        for _ in 0..<1_000 {
            watchdog.progressed()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    let stream = broadcast.stream(bufferingPolicy: .unbounded)
                    group.addTask { for await _ in stream {} }
                }
                group.addTask { for index in 0..<64 { broadcast.publish(.released(id: EntryID(index))) } }
                await Task.yield()
                group.cancelAll()
            }
        }
        #expect(!broadcast.hasSubscribers, "every cancelled subscriber left")
    }
}

/// Ends the process with `what` when `limit` seconds pass with no ``progressed()`` and no
/// ``disarm()``: a deadlock stops the rounds for good, where a pool starved by the rest of the
/// suite (beside a busy loop, 1,000 rounds took more than 120 s in all) only slows them. The
/// check runs on a serial dispatch queue of its own (an overcommitting thread), not on the
/// cooperative pool a deadlock would hold, and nothing waits or sleeps for it.
final class HangWatchdog: Sendable {
    private struct State {
        var disarmed = false
        var rounds = 0
    }

    private let state = LockedBox(State())
    private let queue = DispatchQueue(label: "courier.test.hang-watchdog")
    private let limit: Double
    private let what: String

    init(limit: Double, what: String) {
        self.limit = limit
        self.what = what
        check(after: 0)
    }

    /// Another round done.
    func progressed() { state.withLock { $0.rounds += 1 } }

    func disarm() { state.withLock { $0.disarmed = true } }

    /// In `limit` seconds: the end of the process if no round was done since `rounds`, else
    /// the same check again.
    private func check(after rounds: Int) {
        queue.asyncAfter(deadline: .now() + limit) { [self] in
            let now = state.current
            if now.disarmed { return }
            if now.rounds == rounds { fatalError("hung for \(limit) s: \(what)") }
            check(after: now.rounds)
        }
    }
}
