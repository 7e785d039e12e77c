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
    /// When it replaced a request waiting under its coalescing key
    /// (``EnqueueOptions/coalescingKey``): the id the replaced request is kept under, now
    /// ``EntryState/superseded``. The entry (``id``) is the one that waited, now holding this
    /// request.
    public var superseded: EntryID?

    /// The answer for the entry `id`, whose attempts carry `idempotencyKey`.
    public init(id: EntryID, idempotencyKey: String, deduplicated: Bool, superseded: EntryID? = nil) {
        self.id = id
        self.idempotencyKey = idempotencyKey
        self.deduplicated = deduplicated
        self.superseded = superseded
    }
}
