package import Foundation

/// The upkeep role of the storage contract (``QueueStorage``): what keeps a store healthy over
/// months, run by a service now and then or by `sync` on request, never on a drain's path.
///
/// ```swift
/// let removed = try await store.deleteDelivered(finishedBefore: now.addingTimeInterval(-7 * 86_400))
/// _ = try await store.releaseFreePages()
/// try await store.sweepOrphanBodies()
/// ```
package protocol QueueUpkeepStorage: Sendable {
    /// Deletes delivered entries that finished before `cutoff` (a wall-clock stamp), with
    /// their bodies, in short transactions. Dead and open entries are never touched.
    func deleteDelivered(finishedBefore cutoff: Date) async throws(QueueError) -> RetentionSummary
    /// Gives free space back where the store can (SQLite's free pages); returns how much.
    func releaseFreePages() async throws(QueueError) -> Int
    /// Removes bodies no entry references, left by a crash between storing a body and
    /// committing its entry (only those older than a grace period, so an enqueue under way
    /// keeps its own).
    func sweepOrphanBodies() async throws(QueueError)
    /// The store's own consistency check: `["ok"]` when sound.
    func integrityCheck() async throws(QueueError) -> [String]
    /// Adds `minutes` to the activity kept per minute, in one transaction: delivered and failed
    /// counts are summed with the minute's row, a backlog replaces the row's; then forgets the
    /// minutes before `keepingSince`. A read-only store records nothing.
    func recordActivity(_ minutes: [ActivityMinute], keepingSince: Date) async throws(QueueError)
    /// The minutes kept from the one `since` falls in on, oldest first.
    func activity(since: Date) async throws(QueueError) -> [ActivityMinute]
}
