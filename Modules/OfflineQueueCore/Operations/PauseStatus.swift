import Foundation

/// The pauses in force, and how many pending entries they hold back.
public struct PauseStatus: Sendable, Hashable {
    /// Every pause, the whole queue's first, then groups by name.
    public var pauses: [QueuePause]
    /// Pending entries that a pause holds back.
    public var pendingHeld: Int

    /// The pauses given and the pending entries they hold back; none by default.
    public init(pauses: [QueuePause] = [], pendingHeld: Int = 0) {
        self.pauses = pauses
        self.pendingHeld = pendingHeld
    }

    /// Whether the whole queue is paused.
    public var queuePaused: Bool { pauses.contains { $0.group == nil } }
    /// The paused groups, by name.
    public var pausedGroups: [String] { pauses.compactMap(\.group) }

    /// Whether a pause holds `entry` back (were it pending).
    public func holds(_ entry: QueueEntry) -> Bool {
        queuePaused || entry.group.map(pausedGroups.contains) == true
    }
}
