public import Foundation
import HTTPCore

extension OfflineQueue {
    /// Deletes delivered entries older than ``QueueConfiguration/deliveredRetention`` with
    /// their bodies, and gives the freed pages back to the file system (SQLite; the other
    /// stores have none to give). Returns what went.
    ///
    /// Dead letters and open entries stay; with a `nil` retention no entry is deleted (free
    /// pages, such as those a purge left, are still given back). A
    /// ``QueueService`` calls this when it starts and then every `retentionInterval`; call it
    /// yourself when you drain without the service.
    ///
    /// ```swift
    /// let removed = try await queue.applyRetention()
    /// logger.info("retention", metadata: ["deleted": "\(removed.deletedEntries)"])
    /// ```
    ///
    /// - Parameter now: the wall time delivery times are compared with; the queue's clock by
    ///   default. (Delivery times are wall-clock stamps: a delivered entry has nothing left to
    ///   send, so a clock step can at worst delete it early or keep it longer.)
    @discardableResult
    public func applyRetention(now: Date? = nil) async throws(QueueError) -> RetentionSummary {
        try await upkeep.applyRetention(now: now)
    }
}
