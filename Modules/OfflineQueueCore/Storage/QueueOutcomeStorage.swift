import HTTPCore

/// The outcome's role of the storage contract (``QueueStorage``): what an entry's delivery
/// kept, whether an id was ever given, and word of settlements from any process, so that a
/// caller can await how an entry ends (``OfflineQueue/outcome(of:)``) without polling.
package protocol QueueOutcomeStorage: Sendable {
    /// The response `id` kept at its delivery (``Settlement/kept``), as stored; `nil` when it
    /// kept none, is not delivered, or is gone.
    func keptResponse(of id: EntryID) async throws(QueueError) -> StoredResponse?

    /// Whether `id` was given to an entry of this queue, now or before (an entry purged since
    /// included): no larger than the largest id the queue ever gave.
    func wasIssued(_ id: EntryID) async throws(QueueError) -> Bool

}

/// A watch of ``QueueOutcomeStorage/observeSettlements(_:)``: stopped by ``stop()``, or when
/// it is released.
package final class SettlementWatch: Sendable {
    private let stopping: LockedBox<(@Sendable () -> Void)?>
    /// Whether the store watches: `false` when it could not (on SQLite, no inotify instance
    /// left to this user, `fs.inotify.max_user_instances`), and the caller then looks again
    /// on its own, often.
    package let isLive: Bool

    package init(isLive: Bool = true, stop: @escaping @Sendable () -> Void) {
        self.isLive = isLive
        stopping = LockedBox(stop)
    }

    /// A watch that watches nothing.
    package static var none: SettlementWatch { SettlementWatch {} }

    /// Stops the watch (a call of `wake` already under way may still end). Stopping twice
    /// does nothing.
    package func stop() {
        let stop = stopping.withLock { stop in
            defer { stop = nil }
            return stop
        }
        stop?()
    }

    deinit { stop() }
}

/// The observers of one store's settlements (``QueueOutcomeStorage/observeSettlements(_:)``):
/// any number, fed by one watch of the store's, started with the first and stopped with the
/// last, so a thousand awaited outcomes cost one watch.
package final class SettlementObservers: Sendable {
    private struct State {
        var next = 0
        var observers: [Int: @Sendable () -> Void] = [:]
        var watching = false
    }

    private let state = LockedBox(State())

    package init() {}

    /// Adds `wake`. `start` runs when it is the first observer (to start the store's watch,
    /// which calls ``notify()``), `stop` when the last one stops; both under the observers'
    /// lock, so a start and a stop never cross.
    /// `start` returns whether the store watches; it is tried again for a later observer
    /// while it does not.
    package func observe(
        _ wake: @escaping @Sendable () -> Void, start: () -> Bool, stop: @escaping @Sendable () -> Void
    ) -> SettlementWatch {
        let (id, live) = state.withLock { state in
            if state.observers.isEmpty || !state.watching { state.watching = start() }
            state.next += 1
            state.observers[state.next] = wake
            return (state.next, state.watching)
        }
        return SettlementWatch(isLive: live) { [state] in
            state.withLock { state in
                guard state.observers.removeValue(forKey: id) != nil else { return }
                if state.observers.isEmpty {
                    stop()
                    state.watching = false
                }
            }
        }
    }

    /// Calls every observer.
    package func notify() {
        for wake in state.withLock({ Array($0.observers.values) }) { wake() }
    }
}
