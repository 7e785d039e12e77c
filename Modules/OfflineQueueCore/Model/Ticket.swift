import Foundation
import HTTPCore

/// The answer to an enqueue.
public struct Ticket: Sendable, Hashable {
    /// The entry's id.
    public var id: EntryID
    /// The key its attempts carry.
    public var idempotencyKey: String
    /// Whether an entry with the same caller-given key was already stored (nothing new was
    /// stored).
    public var deduplicated: Bool

    public init(id: EntryID, idempotencyKey: String, deduplicated: Bool) {
        self.id = id
        self.idempotencyKey = idempotencyKey
        self.deduplicated = deduplicated
    }
}
