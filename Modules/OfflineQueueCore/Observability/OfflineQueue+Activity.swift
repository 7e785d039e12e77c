import Foundation

extension OfflineQueue {
    /// The queue's last `minutes` minutes, oldest first, ending with the minute it is now: the
    /// attempts that delivered and failed in each, and the backlog last counted in it
    /// (``ActivityMinute``). Minutes nobody recorded are empty. The store keeps two hours.
    ///
    /// A read of at most `minutes` rows, whatever the queue holds: the drainers keep these
    /// counters as they go, so nothing scans the entries.
    ///
    /// - Parameter minutes: how many minutes, up to and with the current one (1 to 120).
    public func activity(minutes: Int = 60) async throws(QueueError) -> [ActivityMinute] {
        let count = min(max(minutes, 1), 120)
        // This process's own counts, when an interval has passed since its last write.
        if activityBook.takeTurn() { try? await activityBook.flush() }
        let now = configuration.clock.now().wall
        let rows = try await upkeep.store.activity(since: now.addingTimeInterval(-Double(count - 1) * 60))
        return ActivityMinute.series(rows, count: count, now: now)
    }
}
