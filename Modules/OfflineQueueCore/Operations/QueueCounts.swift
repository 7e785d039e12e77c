public import Foundation
import HTTPCore

/// How many entries are in each state, and when the queue next has work.
public struct QueueCounts: Sendable, Hashable, Codable {
    /// Entries waiting to be sent: due now, backing off, or held by a pause.
    public var pending: Int
    /// Entries claimed by a drainer and being sent (those whose drainer is gone included).
    public var inflight: Int
    /// Entries the server accepted, kept until retention or a purge deletes them.
    public var delivered: Int
    /// Entries given up on (dead letters), kept until retried or purged.
    public var dead: Int
    /// Entries waiting for others to be delivered first (``EntryState/blocked``): never claimed
    /// before then, so not ``due``.
    public var blocked = 0
    /// Of ``blocked``, the entries nothing will release: each waits, directly or through others,
    /// for an entry that waits for itself (a loop a queue written before loops were refused may
    /// hold). An operator releases them (``OfflineQueue/release(_:)``, `sync release`) or purges
    /// them. Read only when some entry is blocked.
    public var stuck = 0
    /// Requests replaced by a newer one under their coalescing key before they were sent
    /// (``EntryState/superseded``): kept for the audit trail, never sent.
    public var superseded = 0
    /// Entries whose answer was a conflict no resolver settled (``EntryState/conflict``):
    /// waiting for an operator.
    public var conflict = 0
    /// Entries in flight whose drainer is gone (its process died, or the machine rebooted):
    /// the next claim by any drainer takes them back.
    public var inflightOrphaned = 0
    /// The drainers that hold entries in flight and live (`host:pid:token:boot` on SQLite,
    /// `host:pid:pgN` on PostgreSQL).
    public var drainers: [String] = []
    /// When the oldest pending entry was enqueued.
    public var oldestPendingCreatedAt: Date?
    /// The earliest time a pending entry is due, as a wall time by the clock that read the
    /// counts (for showing); ``nextDue`` is the same instant on the boot clock, for waiting.
    public var nextAttemptAt: Date?
    /// The earliest time a pending entry that no pause holds is due, on the boot clock.
    public var nextDue: DueTime?
    /// Pending entries due now: neither backing off nor held by a pause (nor in flight).
    public var due = 0
    /// Pending entries that would be due but for their origin's flow (``FlowControl``): a
    /// `Retry-After` pause or a limit holds them back now. Not among ``due``, so an alarm that
    /// watches due entries for a stuck queue does not fire for an origin that is only metered.
    public var heldByFlow = 0
    /// Of ``inflight``, the entries this process's drainer holds.
    public var inflightHere = 0
    /// When the last delivery recorded in the store happened, by any process (the latest of
    /// the most recently enqueued delivered entries: close, not exact, when entries are
    /// delivered far out of order).
    public var lastDeliveredAt: Date?

    /// Counts of the four main states, with the oldest pending entry's enqueue time and the next
    /// due time; every other count zero, and no `nextDue`.
    public init(pending: Int = 0, inflight: Int = 0, delivered: Int = 0, dead: Int = 0, oldestPendingCreatedAt: Date? = nil, nextAttemptAt: Date? = nil) {
        self.pending = pending
        self.inflight = inflight
        self.delivered = delivered
        self.dead = dead
        self.oldestPendingCreatedAt = oldestPendingCreatedAt
        self.nextAttemptAt = nextAttemptAt
    }

    /// Entries not yet settled: pending, in flight, blocked, or in conflict.
    public var open: Int { pending + inflight + blocked + conflict }
    /// Every entry.
    public var total: Int { pending + inflight + delivered + dead + blocked + superseded + conflict }
}
