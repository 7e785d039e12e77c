/// What an operator's overview shows, read at once: the counts by state, the pauses, the
/// entries by group and by name (the largest, then the rest summed), the entries waiting for
/// the network, and the recent deliveries. ``OfflineQueue/recentOverview(maxAge:top:window:)``
/// shares one read per interval between every viewer.
///
/// ```swift
/// let overview = try await queue.recentOverview(maxAge: .seconds(1))
/// for group in overview.groups where group.paused { print(group.key ?? "-", "paused,", group.pending, "pending") }
/// print("delivered in the last minute:", overview.deliveredLastMinute)
/// ```
public struct QueueOverview: Sendable, Hashable {
    /// The entries of one group or name, by state; or, as ``QueueOverview/otherGroups`` and
    /// ``QueueOverview/otherNames``, of the keys beyond the largest, summed.
    public struct Tally: Sendable, Hashable, Codable {
        /// The group or the name; `nil` for entries without a group, and for a sum of others.
        public var key: String?
        /// Entries waiting to be sent.
        public var pending = 0
        /// Entries being sent.
        public var inflight = 0
        /// Entries the server accepted.
        public var delivered = 0
        /// Entries given up on (dead letters).
        public var dead = 0
        /// Entries waiting for others to be delivered (``EntryState/blocked``).
        public var blocked = 0
        /// Requests replaced before they were sent (``EntryState/superseded``).
        public var superseded = 0
        /// Conflicts waiting for an operator (``EntryState/conflict``).
        public var conflict = 0
        /// How many keys this sums: 1 for a group or name of its own.
        public var keys = 1
        /// Whether a pause holds the group back (the whole queue's pause holds every group).
        public var paused = false

        /// An empty tally of `key`: every count zero, one key, not paused.
        public init(key: String?) { self.key = key }

        /// Every entry it counts, in any state.
        public var total: Int { pending + inflight + delivered + dead + blocked + superseded + conflict }

        mutating func add(_ state: EntryState, _ count: Int) {
            switch state {
            case .pending: pending += count
            case .inflight: inflight += count
            case .delivered: delivered += count
            case .dead: dead += count
            case .blocked: blocked += count
            case .superseded: superseded += count
            case .conflict: conflict += count
            }
        }

        mutating func add(_ other: Tally) {
            pending += other.pending
            inflight += other.inflight
            delivered += other.delivered
            dead += other.dead
            blocked += other.blocked
            superseded += other.superseded
            conflict += other.conflict
        }
    }

    /// How many entries are in each state, over the whole queue.
    public var counts: QueueCounts
    /// The pauses in force, and how many pending entries they hold back.
    public var pauses: PauseStatus
    /// The largest groups (entries without a group as one, its key `nil`), by total, then key.
    public var groups: [Tally]
    /// The groups beyond ``groups``, summed (``Tally/keys`` of them); `nil` when there are none.
    public var otherGroups: Tally?
    /// The largest names, by total, then name.
    public var names: [Tally]
    /// The names beyond ``names``, summed; `nil` when there are none.
    public var otherNames: Tally?
    /// How many entries the groups and names count: the newest ones, up to the window asked for.
    public var examined: Int
    /// Whether the groups and names count every entry (the queue fits in the window).
    public var complete: Bool
    /// Pending entries waiting for the network to come back.
    public var waitingForNetwork: Int
    /// Entries delivered in the last minute, and the last five minutes (among the newest
    /// 10,000 delivered: close, not exact, when entries are delivered far out of order).
    public var deliveredLastMinute: Int
    /// Entries delivered in the last five minutes, counted as `deliveredLastMinute` is.
    public var deliveredLastFiveMinutes: Int

    /// How many of the newest entries the groups and names count unless told otherwise: a
    /// bounded read however large the queue (on SQLite about 0.8 ms per 1,000 entries, so that
    /// the whole overview of a 1,000,000-entry queue stays under 100 ms; Docs/Benchmarks.md).
    public static let defaultWindow = 20_000

    /// The overview of what a store read: the `top` largest groups and names, the rest summed.
    package init(counts: QueueCounts, pauses: PauseStatus, tally: EntryTally, window: Int, top: Int) {
        self.counts = counts
        self.pauses = pauses
        var groups: [String?: Tally] = [:]
        var names: [String: Tally] = [:]
        for (key, count) in tally.counts {
            groups[key.group, default: Tally(key: key.group)].add(key.state, count)
            names[key.name, default: Tally(key: key.name)].add(key.state, count)
        }
        let paused = Set(pauses.pausedGroups)
        for key in groups.keys {
            groups[key]?.paused = pauses.queuePaused || key.map(paused.contains) == true
        }
        (self.groups, otherGroups) = Self.largest(Array(groups.values), top: top)
        (self.names, otherNames) = Self.largest(Array(names.values), top: top)
        examined = tally.examined
        complete = tally.examined < window
        waitingForNetwork = tally.waitingForNetwork
        deliveredLastMinute = tally.deliveredLastMinute
        deliveredLastFiveMinutes = tally.deliveredLastFiveMinutes
    }

    /// The `top` largest tallies by total (then by key, no key first), and the rest summed.
    static func largest(_ tallies: [Tally], top: Int) -> ([Tally], Tally?) {
        let sorted = tallies.sorted { a, b in
            if a.total != b.total { return a.total > b.total }
            switch (a.key, b.key) {
            case (nil, _): return b.key != nil
            case (_, nil): return false
            case let (x?, y?): return x < y
            }
        }
        let kept = Array(sorted.prefix(max(0, top)))
        let rest = sorted.dropFirst(max(0, top))
        guard !rest.isEmpty else { return (kept, nil) }
        var other = Tally(key: nil)
        other.keys = rest.count
        for tally in rest { other.add(tally) }
        return (kept, other)
    }
}
