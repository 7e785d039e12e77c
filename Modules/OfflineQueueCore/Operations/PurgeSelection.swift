public import Foundation
import HTTPCore

/// What ``OfflineQueue/purge(_:)`` removes.
public enum PurgeSelection: Sendable, Hashable {
    /// Entries in these states (never in flight) that finished, or were enqueued when still
    /// pending, before the date; `nil` for any time.
    case states(Set<EntryState>, finishedBefore: Date?)
    /// These entries, whatever their state, unless in flight under a live lease.
    case ids([EntryID])
}
