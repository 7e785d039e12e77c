public import Foundation
import HTTPCore

/// How an enqueued request is placed in the queue.
public struct EnqueueOptions: Sendable, Hashable {
    /// Entries of one group are delivered in enqueue order.
    public var group: String?
    /// Higher goes first across groups.
    public var priority: Int
    /// A key of the caller's: enqueueing the same key twice stores one entry. `nil` makes a
    /// fresh UUID.
    public var idempotencyKey: String?
    /// The earliest time to send it.
    public var notBefore: Date?
    /// Entries of this queue (by id, as ``Ticket/id`` gives them) that must be delivered before
    /// this one is sent, by any drainer of any process. Until then it is
    /// ``EntryState/blocked``. Each must exist when this one is enqueued: an id the queue does
    /// not hold is refused (``QueueError/noSuchDependency(_:)``), nothing stored.
    public var after: [EntryID]
    /// What becomes of this entry when one it waits for dies.
    public var whenParentDies: ParentDeathPolicy
    /// Keep the response of its delivery (status, the header fields named, the body up to a
    /// limit), for `OfflineQueue.outcome(of:)` in any process, `sync show` and `sync wait`.
    /// `nil` (the default) keeps nothing, and costs nothing.
    public var keepResponse: ResponseKeeping?
    /// Edits that coalesce: an enqueue under a key replaces the request still waiting under it
    /// (pending or blocked, not yet sent), which keeps its id, its place in its group's order
    /// and the entries that wait for it, so a hundred offline edits of one thing send one
    /// request. The replaced request is kept for the audit trail as a ``EntryState/superseded``
    /// entry of its own (``Ticket/superseded``). One already in flight is never replaced: the
    /// new one waits behind it, and goes once it is settled, delivered or not. `nil` (the
    /// default) replaces nothing.
    public var coalescingKey: String?
    /// This entry's own attempts, maximum age, backoff and status rules, in place of the
    /// queue's (``DeliveryPolicy``) where set. `nil` (the default) is the queue's policy.
    public var delivery: EntryDelivery?

    /// Options as given; by default no group, priority 0, a fresh idempotency key, due at once,
    /// waiting for no entry, keeping no response, replacing nothing, and the queue's policy.
    public init(
        group: String? = nil, priority: Int = 0, idempotencyKey: String? = nil, notBefore: Date? = nil,
        after: [EntryID] = [], whenParentDies: ParentDeathPolicy = .die, keepResponse: ResponseKeeping? = nil,
        coalescingKey: String? = nil, delivery: EntryDelivery? = nil
    ) {
        self.delivery = delivery
        self.group = group
        self.priority = priority
        self.idempotencyKey = idempotencyKey
        self.notBefore = notBefore
        self.after = after
        self.whenParentDies = whenParentDies
        self.keepResponse = keepResponse
        self.coalescingKey = coalescingKey
    }
}

/// What becomes of an entry when an entry it waits for (``EnqueueOptions/after``) dies, or is
/// purged before it was delivered: the caller's choice, per entry.
public enum ParentDeathPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// It dies too, with a reason naming the parent (``EntryLifecycle/DeadReason/parentDead``). The default.
    case die
    /// It stays blocked until an operator retries the parent and the parent is delivered. A
    /// parent purged unsent can no longer be retried: then it dies.
    case wait
    /// It goes anyway, once every other entry it waits for is settled: for a request that
    /// needs the parent's attempt, not its success.
    case proceed
}
