public import Foundation

/// An operator's pause: no drainer, in any process, claims the entries it holds until it is
/// lifted. Entries already in flight finish.
public struct QueuePause: Sendable, Hashable {
    /// The paused group; `nil` when the whole queue is paused.
    public var group: String?
    /// When the pause began.
    public var pausedAt: Date

    /// A pause of `group` (`nil`: the whole queue) that began at `pausedAt`.
    public init(group: String?, pausedAt: Date) {
        self.group = group
        self.pausedAt = pausedAt
    }
}
