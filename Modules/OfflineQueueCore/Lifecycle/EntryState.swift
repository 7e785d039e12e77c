import Foundation
import HTTPCore

/// Where an entry is in its life. See `Docs/OfflineQueue.md` for the diagram.
public enum EntryState: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Waiting to be sent: due now, backing off, or waiting for the network.
    case pending
    /// Waiting for entries it depends on (``EnqueueOptions/after``) to be delivered; never
    /// claimed before then. Counted among the open entries, and its group's later entries wait
    /// behind it.
    case blocked
    /// Claimed by a drainer, under a lease, and being sent.
    case inflight
    /// The server accepted it (a 2xx status).
    case delivered
    /// Given up on: rejected by the server, out of attempts, or too old. Kept until purged, and
    /// can be retried.
    case dead
    /// Replaced, before it was sent, by a newer request enqueued under the same coalescing key
    /// (``EnqueueOptions/coalescingKey``): the old request, kept for the audit trail under an id
    /// of its own and never sent. Also a request the app's ``QueueConflict/Resolver`` replaced with a
    /// new one (kept the same way) or dropped after a conflict. Never sent again; removed by
    /// retention as a delivered entry is.
    case superseded
    /// The server answered that the request conflicts with its state (409 and 412 unless the
    /// policy's ``StatusRules`` say otherwise) and no ``QueueConflict/Resolver`` settled it: it waits
    /// for an operator, who sends it again as it is (``OfflineQueue/retry(_:)``) or purges it.
    /// It holds its group, and the entries that wait for it keep waiting.
    case conflict

    public var description: String { rawValue }
}
