import Foundation
import OfflineQueueCore

extension QueueEntry {
    /// Records an answer that was a conflict: left for an operator, or dropped by the app's
    /// resolver (superseded). The attempt counts.
    mutating func record(_ conflict: EntryLifecycle.Transition.Conflict, dropped: Bool, now: QueueTime) {
        state = dropped ? .superseded : .conflict
        attempts += 1
        finishedAt = now.wall
        lastStatus = conflict.status
        lastError = conflict.error
        responseExcerpt = conflict.excerpt
        waitingForNetwork = false
    }
}
