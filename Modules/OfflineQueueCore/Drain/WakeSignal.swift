import HTTPCore

/// A wake-up for any number of waiters (an event count).
///
/// A waiter first takes a ``mark``, then checks whatever it waits for, then waits
/// ``wait(after:timeout:deadline:)`` with that mark: a ``fire()`` anywhere after the mark wakes
/// it, even one that came between the check and the wait, so no wake-up is lost. Every waiter
/// of a fire is woken, each through its own continuation; each waiter's timeout, deadline and
/// cancellation end its own wait and no other. Used by the service loops (an enqueue here or
/// in another process, the network back, a shutdown) and by ``DrainControl``.
///
/// ```swift
/// while !done {
///     let mark = signal.mark
///     if try await somethingToDo() { continue }
///     await signal.wait(after: mark, timeout: .seconds(5))
/// }
/// ```
package final class WakeSignal: Sendable {
    /// A point in the signal's history: a wait after it returns once the signal has fired since.
    package struct Mark: Sendable, Hashable {
        fileprivate let fires: UInt64
    }

    private struct State {
        var fires: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = LockedBox(State())

    package init() {}

    /// Now, as a point to wait after.
    package var mark: Mark { Mark(fires: state.withLock { $0.fires }) }

    /// How many waits are parked, for tests.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Wakes every wait parked now, and every later wait after a mark taken before this call.
    package func fire() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.fires &+= 1
            defer { state.waiters.removeAll(keepingCapacity: true) }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns when the signal has fired since `mark` (at once if it has already), when
    /// `timeout` passes (real time on the boot clock), when `deadline` returns (a sleep on
    /// the queue's boot clock, say), or when the task is cancelled, whichever comes first.
    /// Nothing of the wait outlives the call.
    package func wait(after mark: Mark, timeout: Duration? = nil, deadline: (@Sendable () async -> Void)? = nil) async {
        guard timeout != nil || deadline != nil else {
            await parked(after: mark)
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.parked(after: mark) }
            if let timeout { group.addTask { await BootClock.sleep(for: timeout) } }
            if let deadline { group.addTask { await deadline() } }
            await group.next()
            group.cancelAll()
        }
    }

    /// ``wait(after:timeout:deadline:)`` after a mark taken now: the next fire.
    package func wait(timeout: Duration? = nil) async {
        await wait(after: mark, timeout: timeout)
    }

    /// One waiter, parked under its own number until a fire after `mark` or its cancellation.
    private func parked(after mark: Mark) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // A cancellation handler that ran before this found no waiter to resume; the
                // task is marked cancelled before its handler runs, so this sees it.
                let resumeNow = state.withLock { state -> Bool in
                    if state.fires != mark.fires || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
