public import Foundation
public import HTTPCore

/// Where an entry is in its life. See `Docs/OfflineQueue.md` for the diagram.
public enum EntryState: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Waiting to be sent: due now, backing off, or waiting for the network.
    case pending
    /// Claimed by a drainer, under a lease, and being sent.
    case inflight
    /// The server accepted it (a 2xx status).
    case delivered
    /// Given up on: rejected by the server, out of attempts, or too old. Kept until purged, and
    /// can be retried.
    case dead

    public var description: String { rawValue }
}

/// The stable identity of a queued request.
public typealias EntryID = Int64

/// One stored request and what became of it so far.
public struct QueueEntry: Sendable, Hashable, Identifiable {
    /// The row id; grows with every enqueue, so it also orders entries by age.
    public var id: EntryID
    /// The key sent in the idempotency header at every attempt.
    public var idempotencyKey: String
    /// The HTTP method.
    public var method: String
    /// The absolute URL, query included.
    public var url: String
    /// Header fields in order, as stored (secrets only when the caller opted in).
    public var headers: [StoredHeader]
    /// Where the body is, if there is one.
    public var body: StoredBody?
    /// The plugin scopes the request was made under; plugins of these scopes run at replay.
    public var scopes: [String]
    /// The endpoint's name, for logs and metrics.
    public var name: String
    /// Entries of one group are delivered in order; `nil` for an entry with no ordering.
    public var group: String?
    /// Higher goes first across groups.
    public var priority: Int
    /// The limit for one exchange; `nil` uses the client's.
    public var timeout: Duration?
    /// Where the entry is in its life.
    public var state: EntryState
    /// Attempts that counted against the budget (failures caused by the network being gone
    /// do not count).
    public var attempts: Int
    /// When the entry was enqueued.
    public var createdAt: Date
    /// When the current attempt budget started: the enqueue, or the last manual retry.
    public var budgetStartedAt: Date
    /// When the entry is due next (meaningful while pending), as the wall clock of the process
    /// that set it read it. Waits use ``nextDue``; show ``nextAttempt(at:)``.
    public var nextAttemptAt: Date
    /// When the entry is due next on the boot clock, for a pending entry whose store can say
    /// (`nil` otherwise: then ``nextAttemptAt`` is all there is).
    public var nextDue: DueTime?
    /// When the last attempt started.
    public var lastAttemptAt: Date?
    /// When the entry was delivered or dead-lettered.
    public var finishedAt: Date?
    /// Whether the entry waits for the network to come back rather than for a backoff.
    public var waitingForNetwork: Bool
    /// The drainer holding the entry, while in flight.
    public var leaseOwner: String?
    /// When that drainer's claim lapses.
    public var leaseExpiresAt: Date?
    /// The status of the last response, if any.
    public var lastStatus: Int?
    /// The last failure, in words.
    public var lastError: String?
    /// The start of the last error response's body (for dead letters above all).
    public var responseExcerpt: String?
    /// When the current budget started on the boot clock (see ``QueueTime``); what the age
    /// limit measures from.
    package var budgetUptime: Double = 0
    /// Why the entry is dead; `nil` unless it is.
    public var deadReason: DeadReason? = nil
    /// The entry's seal when it is sealed at rest (``QueueSealing``): then ``url`` is its
    /// origin alone, ``headers`` is empty and ``body`` holds the sealed bytes; the request is
    /// opened only to be sent.
    package var seal: StoredSeal? = nil
    /// The trace the entry was enqueued in, which its attempts continue; `nil` for an entry
    /// enqueued outside any trace (or by a Courier that kept none). Clear even when the entry
    /// is sealed.
    public var traceContext: TraceContext? = nil

    /// The id of the key the entry is sealed under, or `nil` when it is stored in clear.
    public var sealKeyID: String? { seal?.keyID }

    /// The size of the body as it was enqueued (``body`` holds more when the entry is sealed).
    public var bodyLength: Int? {
        guard let body else { return nil }
        guard seal != nil else { return body.length }
        return EntrySealing.plaintextLength(sealedLength: body.length)
    }

    /// An entry as a store reads it back.
    package init(
        id: EntryID, idempotencyKey: String, method: String, url: String, headers: [StoredHeader], body: StoredBody?,
        scopes: [String], name: String, group: String?, priority: Int, timeout: Duration?, state: EntryState, attempts: Int,
        createdAt: Date, budgetStartedAt: Date, nextAttemptAt: Date, lastAttemptAt: Date?, finishedAt: Date?,
        waitingForNetwork: Bool, leaseOwner: String?, leaseExpiresAt: Date?, lastStatus: Int?, lastError: String?,
        responseExcerpt: String?, budgetUptime: Double = 0, deadReason: DeadReason? = nil, nextDue: DueTime? = nil
    ) {
        self.id = id
        self.idempotencyKey = idempotencyKey
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.scopes = scopes
        self.name = name
        self.group = group
        self.priority = priority
        self.timeout = timeout
        self.state = state
        self.attempts = attempts
        self.createdAt = createdAt
        self.budgetStartedAt = budgetStartedAt
        self.nextAttemptAt = nextAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.finishedAt = finishedAt
        self.waitingForNetwork = waitingForNetwork
        self.leaseOwner = leaseOwner
        self.leaseExpiresAt = leaseExpiresAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.responseExcerpt = responseExcerpt
        self.budgetUptime = budgetUptime
        self.deadReason = deadReason
        self.nextDue = nextDue
    }

    /// When the entry is due next, for showing at `now`: its boot-clock due time by the wall
    /// clock of `now`, or the stored wall time where the store keeps no boot-clock one.
    public func nextAttempt(at now: QueueTime) -> Date {
        guard let nextDue, nextDue.boot == now.boot else { return nextAttemptAt }
        return nextDue.wallTime(at: now)
    }
}

/// One header field as stored.
public struct StoredHeader: Sendable, Hashable, Codable {
    /// The field name as given.
    public var name: String
    /// The value; may hold `${env:NAME}` or `${credential:NAME}` templates resolved at send time.
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Where a stored body lives.
public enum StoredBody: Sendable, Hashable {
    /// Small bodies, in the row.
    case inline(Data)
    /// Large bodies, kept apart from the row (the reference only) and streamed at replay: a
    /// file in a SQLite queue's body folder, chunks on PostgreSQL.
    case file(name: String, length: Int)

    /// The body's length in bytes.
    public var length: Int {
        switch self {
        case .inline(let data): data.count
        case .file(_, let length): length
        }
    }
}

/// How many entries are in each state, and when the queue next has work.
public struct QueueCounts: Sendable, Hashable, Codable {
    public var pending: Int
    public var inflight: Int
    public var delivered: Int
    public var dead: Int
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
    /// Of ``inflight``, the entries this process's drainer holds.
    public var inflightHere = 0
    /// When the last delivery recorded in the store happened, by any process (the latest of
    /// the most recently enqueued delivered entries: close, not exact, when entries are
    /// delivered far out of order).
    public var lastDeliveredAt: Date?

    public init(pending: Int = 0, inflight: Int = 0, delivered: Int = 0, dead: Int = 0, oldestPendingCreatedAt: Date? = nil, nextAttemptAt: Date? = nil) {
        self.pending = pending
        self.inflight = inflight
        self.delivered = delivered
        self.dead = dead
        self.oldestPendingCreatedAt = oldestPendingCreatedAt
        self.nextAttemptAt = nextAttemptAt
    }

    /// Entries not yet delivered or dead.
    public var open: Int { pending + inflight }
    /// Every entry.
    public var total: Int { pending + inflight + delivered + dead }
}

/// Which entries a listing shows.
///
/// ```swift
/// // The dead entries of one endpoint sent to one origin, 100 at a time.
/// var filter = EntryFilter(states: [.dead], name: "POST /orders", origin: "https://api.example.com")
/// let page = try await queue.entryPage(filter, scanLimit: 5_000)
/// filter.after = page.next                     // nil: there is no next page
/// ```
public struct EntryFilter: Sendable, Hashable {
    /// Only these states; empty for all.
    public var states: Set<EntryState>
    /// Only this group.
    public var group: String?
    /// Only entries of this name (``QueueEntry/name``), compared as is.
    public var name: String?
    /// Only entries whose URL is on this origin: `scheme://host[:port]` as the URL is stored
    /// (see ``matches(origin:url:)``).
    public var origin: String?
    /// At most this many, oldest first.
    public var limit: Int
    /// Only entries with an id above this one, for paging.
    public var after: EntryID?

    public init(
        states: Set<EntryState> = [], group: String? = nil, name: String? = nil, origin: String? = nil, limit: Int = 100,
        after: EntryID? = nil
    ) {
        self.states = states
        self.group = group
        self.name = name
        self.origin = origin
        self.limit = limit
        self.after = after
    }

    /// Whether a stored `url` is on `origin`: the URL is the origin itself, or the origin
    /// followed by a path (`/`) or a query (`?`). So `https://a.example` matches
    /// `https://a.example/x` but not `https://a.example.org/x` nor `https://a.example:8443/x`.
    /// Every store applies this rule (in SQL where the store is a database).
    public static func matches(origin: String, url: String) -> Bool {
        url == origin || url.utf8.starts(with: (origin + "/").utf8) || url.utf8.starts(with: (origin + "?").utf8)
    }
}

/// A page of a listing whose filter a store matches over a bounded number of rows
/// (``OfflineQueue/entryPage(_:scanLimit:)``): the entries found, and where the next page starts.
public struct EntryPage: Sendable, Hashable {
    /// The entries found, oldest first; fewer than the filter's limit when the scan ended first.
    public var entries: [QueueEntry]
    /// The next page's ``EntryFilter/after``: the last entry returned when the page is full, the
    /// last row examined when the scan limit ended it; `nil` when no row is left to examine.
    public var next: EntryID?

    public init(entries: [QueueEntry] = [], next: EntryID? = nil) {
        self.entries = entries
        self.next = next
    }
}

/// What ``OfflineQueue/purge(_:)`` removes.
public enum PurgeSelection: Sendable, Hashable {
    /// Entries in these states (never in flight) that finished, or were enqueued when still
    /// pending, before the date; `nil` for any time.
    case states(Set<EntryState>, finishedBefore: Date?)
    /// These entries, whatever their state, unless in flight under a live lease.
    case ids([EntryID])
}

/// How an enqueued request is placed in the queue.
public struct EnqueueOptions: Sendable, Hashable {
    /// Entries of one group are delivered in enqueue order.
    public var group: String?
    /// Higher goes first across groups.
    public var priority: Int
    /// A key of the caller's: enqueueing the same key twice stores one entry. `nil` makes a
    /// fresh UUID.
    public var idempotencyKey: String?
    /// The earliest time to send it.
    public var notBefore: Date?

    public init(group: String? = nil, priority: Int = 0, idempotencyKey: String? = nil, notBefore: Date? = nil) {
        self.group = group
        self.priority = priority
        self.idempotencyKey = idempotencyKey
        self.notBefore = notBefore
    }
}

/// The answer to an enqueue.
public struct Ticket: Sendable, Hashable {
    /// The entry's id.
    public var id: EntryID
    /// The key its attempts carry.
    public var idempotencyKey: String
    /// Whether an entry with the same caller-given key was already stored (nothing new was
    /// stored).
    public var deduplicated: Bool

    public init(id: EntryID, idempotencyKey: String, deduplicated: Bool) {
        self.id = id
        self.idempotencyKey = idempotencyKey
        self.deduplicated = deduplicated
    }
}

/// The answer to ``OfflineQueue/send(_:options:)``.
public enum SendOutcome: Sendable {
    /// Sent at once, with the response.
    case sent(Response<Data>)
    /// The network was gone: stored, to be sent when it is back.
    case queued(Ticket)

    /// The ticket, when the request was queued.
    public var ticket: Ticket? {
        if case .queued(let ticket) = self { return ticket }
        return nil
    }
}
