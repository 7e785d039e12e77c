public import Foundation

/// Which entries a bulk ``OfflineQueue/retry(matching:dryRun:)`` or
/// ``OfflineQueue/purge(matching:dryRun:)`` changes: every condition that is set must hold.
///
/// ```swift
/// // Every dead entry of group "user-42" that the server refused with a 5xx, a day old or more.
/// let selection = EntrySelection(states: [.dead], group: "user-42", status: 500...599, olderThan: .seconds(86_400))
/// let preview = try await queue.retry(matching: selection, dryRun: true)
/// print("would retry", preview.ids)
/// try await queue.retry(matching: selection)
/// ```
public struct EntrySelection: Sendable, Hashable {
    /// Only entries in these states; empty means the operation's default (see each operation).
    public var states: Set<EntryState>
    /// Only entries of this group.
    public var group: String?
    /// Only entries whose last response had a status in this range (`503...503` for one code,
    /// `500...599` for a class); entries that never got a response do not match.
    public var status: ClosedRange<Int>?
    /// Only entries that finished (delivered or dead) at least this long ago, or, while still
    /// open, were enqueued at least this long ago; measured on the wall clock, as the stored
    /// times are.
    public var olderThan: Duration?
    /// Only entries whose stored URL starts with this text (compared as is, case and all).
    public var urlPrefix: String?
    /// Only entries of this name (``QueueEntry/name``).
    public var name: String?
    /// Only entries on this origin, by the rule of ``EntryFilter/matches(origin:url:)``.
    public var origin: String?
    /// Only entries with an id above this one: where the next batch of a change made in
    /// batches starts.
    public var after: EntryID?
    /// Only entries with an id up to this one: a change made in batches leaves alone what was
    /// enqueued after it was asked for.
    public var through: EntryID?
    /// At most this many entries, the oldest first (those skipped count too): one batch.
    public var limit: Int?

    public init(
        states: Set<EntryState> = [], group: String? = nil, status: ClosedRange<Int>? = nil,
        olderThan: Duration? = nil, urlPrefix: String? = nil, name: String? = nil, origin: String? = nil,
        after: EntryID? = nil, through: EntryID? = nil, limit: Int? = nil
    ) {
        self.states = states
        self.group = group
        self.status = status
        self.olderThan = olderThan
        self.urlPrefix = urlPrefix
        self.name = name
        self.origin = origin
        self.after = after
        self.through = through
        self.limit = limit
    }
}

/// How many entries a selection matches, and the newest of them: a change made later in
/// batches goes ``EntrySelection/through`` it, so it touches no entry enqueued since.
public struct SelectionCount: Sendable, Hashable {
    public var count: Int
    /// The largest id matched; `nil` when nothing is.
    public var newest: EntryID?

    public init(count: Int = 0, newest: EntryID? = nil) {
        self.count = count
        self.newest = newest
    }
}

/// What a bulk retry or purge changed, or, in a dry run, would change. All of it happened in
/// one transaction: a concurrent drainer saw either none of it or all of it.
public struct BulkChange: Sendable, Hashable {
    /// The entries changed (or that would be), oldest first.
    public var ids: [EntryID]
    /// Entries the selection matched but the operation left alone: those in flight (a retry
    /// never touches them; a purge only when their drainer is gone).
    public var skipped: [EntryID]
    /// Whether nothing was changed: the answer of a dry run.
    public var dryRun: Bool
    /// In a dry run, the entries that would change, as they are now; empty otherwise.
    public var entries: [QueueEntry]

    public init(ids: [EntryID] = [], skipped: [EntryID] = [], dryRun: Bool = false, entries: [QueueEntry] = []) {
        self.ids = ids
        self.skipped = skipped
        self.dryRun = dryRun
        self.entries = entries
    }
}

/// An operator's pause: no drainer, in any process, claims the entries it holds until it is
/// lifted. Entries already in flight finish.
public struct QueuePause: Sendable, Hashable {
    /// The paused group; `nil` when the whole queue is paused.
    public var group: String?
    /// When the pause began.
    public var pausedAt: Date

    public init(group: String?, pausedAt: Date) {
        self.group = group
        self.pausedAt = pausedAt
    }
}

/// The pauses in force, and how many pending entries they hold back.
public struct PauseStatus: Sendable, Hashable {
    /// Every pause, the whole queue's first, then groups by name.
    public var pauses: [QueuePause]
    /// Pending entries that a pause holds back.
    public var pendingHeld: Int

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
