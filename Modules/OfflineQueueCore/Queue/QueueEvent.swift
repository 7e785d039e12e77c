public import Foundation
import HTTPCore

/// Something that happened to an entry, for apps, logs and metrics.
///
/// ```swift
/// for await event in queue.events() {
///     if case .deadLettered(let id, let reason, let error) = event { alert(id, reason, error) }
/// }
/// ```
public enum QueueEvent: Sendable, Hashable {
    /// A request was stored.
    case enqueued(Ticket)
    /// A drainer claimed the entry and is sending it; `attempt` counts from 1 and includes
    /// attempts that did not count against the budget.
    case attemptStarted(id: EntryID, attempt: Int)
    /// The server accepted it.
    case delivered(id: EntryID, status: Int)
    /// It failed and will be tried again at `at`.
    case willRetry(id: EntryID, at: Date, error: String)
    /// The network was gone; it waits for the network to come back (no attempt counted).
    case waitingForNetwork(id: EntryID)
    /// It went to dead letters.
    case deadLettered(id: EntryID, reason: EntryLifecycle.DeadReason, error: String)
    /// The server answered with a conflict (``StatusMeaning/conflict``) and no resolver settled
    /// it: it waits in ``EntryState/conflict`` for an operator.
    case conflicted(id: EntryID, status: Int)
    /// The queue's ``QueueConflict/Resolver`` dropped it after a conflict (``EntryState/superseded``).
    case dropped(id: EntryID, status: Int)
    /// The drainer stopped before the attempt ended; the entry is pending again, nothing counted.
    case released(id: EntryID)
    /// The drainer's lease lapsed before it finished, and another drainer has the entry now:
    /// this attempt's result was not recorded.
    case leaseLost(id: EntryID)
    /// The origin's server answered as an unwell one too often in a row: its circuit opened,
    /// and its entries wait for a probe (``OriginHealth``). `error`: the last answer, in words.
    /// Published once, by the drainer whose commit opened it.
    case circuitOpened(origin: String, error: String)
    /// A probe of the origin was delivered (or an operator closed the circuit): its entries are
    /// due again.
    case circuitClosed(origin: String)
}

/// Fans events out to every live subscriber. Publishing without subscribers costs a lock.
final class EventBroadcast: Sendable {
    private let subscribers = LockedBox<[UUID: AsyncStream<QueueEvent>.Continuation]>([:])

    var hasSubscribers: Bool { !subscribers.current.isEmpty }

    /// Yields outside the lock. A yield resumes the subscriber's task and so takes that task's
    /// status lock, while a subscriber being cancelled holds its status lock and ends in
    /// `onTermination`, which takes this lock: yielding under it would take the two locks in
    /// the opposite order and could block both threads of the cooperative pool for good.
    func publish(_ event: QueueEvent) {
        let continuations = subscribers.withLock { Array($0.values) }
        for continuation in continuations { continuation.yield(event) }
    }

    func stream(bufferingPolicy: AsyncStream<QueueEvent>.Continuation.BufferingPolicy) -> AsyncStream<QueueEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: QueueEvent.self, bufferingPolicy: bufferingPolicy)
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }
}
