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

    public init(group: String? = nil, priority: Int = 0, idempotencyKey: String? = nil, notBefore: Date? = nil) {
        self.group = group
        self.priority = priority
        self.idempotencyKey = idempotencyKey
        self.notBefore = notBefore
    }
}
