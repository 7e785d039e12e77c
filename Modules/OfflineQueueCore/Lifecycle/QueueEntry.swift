public import Foundation
import HTTPCore

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
    public var deadReason: EntryLifecycle.DeadReason? = nil
    /// The entry's seal when it is sealed at rest (``QueueSealing``): then ``url`` is its
    /// origin alone, ``headers`` is empty and ``body`` holds the sealed bytes; the request is
    /// opened only to be sent.
    package var seal: StoredSeal? = nil
    /// The trace the entry was enqueued in, which its attempts continue; `nil` for an entry
    /// enqueued outside any trace (or by a Courier that kept none). Clear even when the entry
    /// is sealed.
    public var traceContext: TraceContext? = nil
    /// What of its delivery's response the entry keeps (``EnqueueOptions/keepResponse``);
    /// `nil` when it keeps none.
    public var keepResponse: ResponseKeeping? = nil
    /// The entries whose kept responses its request takes values from (``ResponseReference``),
    /// in id order; empty for most. Each is one it waits for.
    public var responseSources: [EntryID] = []
    /// Whether its body takes values from them (a body held in memory at enqueue): read whole
    /// at each attempt to put them in. A URL and headers are read for them at every attempt.
    package var bodyTakesValues = false
    /// The key under which a newer enqueue replaces it while it waits
    /// (``EnqueueOptions/coalescingKey``); `nil` for most.
    public var coalescingKey: String? = nil
    /// Its own delivery policy (``EnqueueOptions/delivery``); `nil` for the queue's.
    public var delivery: EntryDelivery? = nil

    /// The policy its attempts follow: the queue's, with the entry's own settings in place.
    package func policy(under queue: DeliveryPolicy) -> DeliveryPolicy {
        delivery.map { $0.applied(to: queue) } ?? queue
    }

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
        responseExcerpt: String?, budgetUptime: Double = 0, deadReason: EntryLifecycle.DeadReason? = nil, nextDue: DueTime? = nil
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
