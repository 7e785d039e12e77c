import Foundation
public import HTTPCore
public import HTTPTypes

/// Everything an ``OfflineQueue`` needs besides its client and monitor.
///
/// ```swift
/// var configuration = QueueConfiguration(path: "/var/lib/myapp/queue.db")
/// configuration.policy.maxAttempts = 5
/// configuration.concurrency = 16
/// configuration.secretHeaders.insert(HTTPField.Name("X-Api-Key")!)
/// ```
public struct QueueConfiguration: Sendable {
    /// Where the queue lives: a SQLite file, whose large bodies live in the folder
    /// `path + ".bodies"` beside it, or a `postgres://` URL (opened by `OfflineQueue.open` of
    /// `OfflineQueuePostgres`).
    public var path: String
    /// Whether opening creates a missing queue: a file with mode 0600, or PostgreSQL's schema.
    public var createIfMissing: Bool
    /// How hard commits work to reach the disk.
    public var durability: QueueDurability
    /// Retries, backoff, attempt budget and maximum age.
    public var policy: DeliveryPolicy
    /// How many entries are sent at once by one drainer (each group still one at a time).
    public var concurrency: Int
    /// How many of them go to one origin at once, at most. `nil` (unless set): what the
    /// client's transport puts on the wire to one host at once when it knows
    /// (`HTTPCore.Transport.sendsAtOnce(toOrigin:)`: AsyncHTTPClient's HTTP/1.1 connections),
    /// else no cap beyond ``concurrency``. The rest wait in the drain's hand instead of the
    /// transport's pool, where a `Retry-After` pause or an open circuit (``OriginHealth``) gives
    /// them back unsent: a request waiting for a connection in the pool goes once one is free,
    /// whatever the origin said meanwhile.
    public var sendsPerOrigin: Int?
    /// The header every attempt carries with the entry's idempotency key.
    public var idempotencyHeader: HTTPField.Name
    /// Header fields holding secrets: HTTPCore's one credential set
    /// (`HTTPField.Name.credentialFields`: `Authorization`, `Proxy-Authorization`, `Cookie`,
    /// `X-API-Key`, `Api-Key`, `X-Auth-Token`) unless changed. Enqueue, replay (redirects,
    /// excerpts) and `sync show` all use this set.
    public var secretHeaders: Set<HTTPField.Name>
    /// What enqueue does with a secret header.
    public var secrets: SecretHandling
    /// Bodies up to this many bytes are stored in the row; larger ones apart from it (a file
    /// beside a SQLite queue, chunks on PostgreSQL).
    public var inlineBodyLimit: Int
    /// How `${env:…}` and `${credential:…}` header placeholders are resolved at send time.
    public var templates: HeaderTemplates
    /// Where the queue reads the time; ``QueueClock/system`` unless a test moves time by hand.
    public var clock: QueueClock = .system
    /// How long a delivered entry (and its body) is kept before
    /// ``OfflineQueue/applyRetention(now:)`` deletes it; `nil` keeps delivered entries until
    /// purged. Seven days unless changed. Dead letters are never deleted by retention: they
    /// wait for someone to retry or purge them.
    public var deliveredRetention: Duration?
    /// Opens an existing queue for reading only, for a process that may not write it or its
    /// folder (`sync list`, `show`, `stats`). `false` unless set.
    ///
    /// Such a queue reads entries and counts; everything that writes (enqueue, drain, retry,
    /// purge, retention) throws ``QueueError/readOnly(path:)``, and nothing is created beside
    /// a file, not even a body folder. ``createIfMissing`` does not apply: a missing file (or
    /// PostgreSQL schema) is ``QueueError/databaseMissing(path:)``. See "Files and permissions"
    /// in `Docs/OfflineQueue.md` for what a reader without write access sees.
    public var readOnly: Bool = false
    /// What the queue reports through swift-metrics: on, as `courier_queue_*`, unless changed.
    public var metrics = QueueMetricsOptions()
    /// Whether entries are sealed at rest, and with which keys (``QueueSealing``). Off by default.
    public var sealing: QueueSealing = .off
    /// How enqueues keep their trace context and deliveries continue it. On, with the
    /// bootstrapped tracer, unless changed.
    public var tracing = QueueTracing()
    /// Decides, in the drainer's process, what becomes of an entry whose answer was a conflict
    /// (``StatusMeaning/conflict``: 409 and 412 unless the policy says otherwise): a new
    /// request in its place, dropped, dead, or left for an operator. `nil` (the default) leaves
    /// every conflict for an operator (``EntryState/conflict``).
    public var conflictResolver: QueueConflict.Resolver?
    /// How the queue treats the servers it delivers to: pauses and slows an origin on its
    /// 429s and 503s for every drainer, holds the limits set here across the fleet, and may
    /// spread a fleet's replays after the network returns (``FlowControl``).
    public var flow = FlowControl()

    /// A configuration for the queue at `path`. By default it is created if missing, commits
    /// fully, retries by the default policy, sends 8 entries at once with their key in
    /// `Idempotency-Key`, drops secret headers, stores bodies over 64 KiB apart and keeps
    /// delivered entries for seven days.
    public init(
        path: String,
        createIfMissing: Bool = true,
        durability: QueueDurability = .full,
        policy: DeliveryPolicy = DeliveryPolicy(),
        concurrency: Int = 8,
        idempotencyHeader: HTTPField.Name = HTTPField.Name("Idempotency-Key")!,
        secretHeaders: Set<HTTPField.Name> = HTTPField.Name.credentialFields,
        secrets: SecretHandling = .drop,
        inlineBodyLimit: Int = 64 * 1024,
        templates: HeaderTemplates = HeaderTemplates(),
        deliveredRetention: Duration? = .seconds(7 * 24 * 3600)
    ) {
        self.path = path
        self.createIfMissing = createIfMissing
        self.durability = durability
        self.policy = policy
        self.concurrency = max(1, concurrency)
        self.idempotencyHeader = idempotencyHeader
        self.secretHeaders = secretHeaders
        self.secrets = secrets
        self.inlineBodyLimit = inlineBodyLimit
        self.templates = templates
        self.deliveredRetention = deliveredRetention
    }
}
