package import Foundation

/// The upkeep role of the storage contract (``QueueStorage``): what keeps a store healthy over
/// months, run by a service now and then or by `sync` on request, never on a drain's path.
///
/// ```swift
/// let removed = try await store.clean(StoreCleaning(deliveredBefore: now.addingTimeInterval(-7 * 86_400)))
/// ```
package protocol QueueUpkeepStorage: Sendable {
    /// The store's cleaning (``StoreCleaning``), in short transactions, never on a drain's
    /// path: deletes the delivered entries that finished before a cutoff (a wall-clock stamp)
    /// with their bodies (dead and open entries are never touched, nor a parent whose response
    /// a child still waits for); removes bodies no entry references, left by a crash between
    /// storing a body and committing its entry (only those older than a grace period, so an
    /// enqueue under way keeps its own); then gives free space back where the store can
    /// (SQLite's free pages). Returns what it removed and released.
    func clean(_ cleaning: StoreCleaning) async throws(QueueError) -> RetentionSummary
    /// The store's own consistency check: `["ok"]` when sound.
    func integrityCheck() async throws(QueueError) -> [String]
    /// Adds `minutes` to the activity kept per minute, in one transaction: delivered and failed
    /// counts are summed with the minute's row, a backlog replaces the row's; then forgets the
    /// minutes before `keepingSince`. A read-only store records nothing.
    func recordActivity(_ minutes: [ActivityMinute], keepingSince: Date) async throws(QueueError)
    /// The minutes kept from the one `since` falls in on, oldest first.
    func activity(since: Date) async throws(QueueError) -> [ActivityMinute]
}

/// What ``QueueUpkeepStorage/clean(_:)`` does.
package struct StoreCleaning: Sendable, Hashable {
    /// Delete the delivered entries that finished before this; nil deletes none.
    package var deliveredBefore: Date?
    /// Remove the bodies no entry references.
    package var sweepsOrphanBodies = false
    /// Give free space back (after deletes, the pages they freed).
    package var releasesFreePages = true

    package init(deliveredBefore: Date? = nil, sweepsOrphanBodies: Bool = false, releasesFreePages: Bool = true) {
        self.deliveredBefore = deliveredBefore
        self.sweepsOrphanBodies = sweepsOrphanBodies
        self.releasesFreePages = releasesFreePages
    }
}

/// The cleaning as the engine and the tests spell it, each one ``QueueUpkeepStorage/clean(_:)``.
extension QueueUpkeepStorage {
    package func deleteDelivered(finishedBefore cutoff: Date) async throws(QueueError) -> RetentionSummary {
        try await clean(StoreCleaning(deliveredBefore: cutoff, releasesFreePages: false))
    }

    package func releaseFreePages() async throws(QueueError) -> Int {
        try await clean(StoreCleaning()).releasedPages
    }

    package func sweepOrphanBodies() async throws(QueueError) {
        _ = try await clean(StoreCleaning(sweepsOrphanBodies: true, releasesFreePages: false))
    }
}
