package import Foundation

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
    /// Only these entries (the engine's retry, purge and release by id).
    package var ids: [EntryID]?
    /// Finished (or, while open, enqueued) before this time (a purge by state and age).
    package var finishedBefore: Date?

    /// A selection of the conditions given; those left `nil` (or `states` left empty) do not
    /// narrow it.
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

extension EntrySelection {
    /// The entries among `ids` in `states` (every state when empty).
    package init(states: Set<EntryState> = [], ids: [EntryID]) {
        self.init(states: states)
        self.ids = ids
    }
}
