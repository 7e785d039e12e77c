import Foundation
public import HTTPCore

/// When the queue sends an entry again, and when it gives up.
///
/// The default retries a failing entry until it is seven days old (Workbox's
/// `maxRetentionTime`), with full-jitter backoff from 1 s doubling to a 5-minute cap: about
/// 150 s between attempts on average once capped, so a backend down for hours or days loses
/// nothing. Set ``maxAttempts`` to also give up after a number of attempts.
///
/// ```swift
/// var policy = DeliveryPolicy()
/// policy.maxAttempts = 8
/// policy.maxAge = .seconds(24 * 3600)
/// policy.backoff = Backoff(base: .seconds(1), cap: .seconds(600))
/// ```
public struct DeliveryPolicy: Sendable, Hashable {
    /// The delay before retry n: full jitter under `min(cap, base × multiplierⁿ⁻¹)`.
    public var backoff: Backoff
    /// Attempts that may count against the budget before the entry is dead-lettered; `nil`
    /// (the default) for no limit: ``maxAge`` alone ends the retries.
    public var maxAttempts: Int?
    /// How long after enqueue (or a manual retry) an entry may still be sent, measured on the
    /// boot clock (see ``QueueTime``); older entries are dead-lettered instead of sent. `nil`
    /// for no limit.
    public var maxAge: Duration?
    /// The longest `Retry-After` honoured; a longer one waits this long.
    public var maxRetryAfter: Duration
    /// How long an entry whose send found the network gone waits before being tried again when
    /// no monitor says the network is back (a monitor's "online" makes it due at once).
    public var networkRecheck: Duration
    /// How long a claim lasts without renewal. A live drainer renews the leases of its sends
    /// in flight at half this duration; a drainer that dies loses its claims at once (its hold
    /// dies with it: a lock file on SQLite, an advisory lock on PostgreSQL), so the lease only
    /// guards against a drainer that lives but hangs.
    public var leaseDuration: Duration
    /// How much of an error response's body is kept with the entry.
    public var excerptLimit: Int
    /// Which statuses mean delivered, retry, dead or conflict (``StatusRules/standard``: 409
    /// and 412 are conflicts, the rest as HTTPCore classifies them). An entry's own rules
    /// (``EntryDelivery/statuses``) come first.
    public var statuses: StatusRules = .standard
    /// Whether a drainer extends the leases of its sends in flight (at half their duration).
    /// Only tests turn it off, to play a drainer that hangs without dying.
    package var renewsLeases = true

    /// A policy with the defaults described above: no attempt limit, a maximum age of seven days,
    /// backoff from 1 s doubling to 5 minutes, and leases of 5 minutes. A `maxAttempts` below 1
    /// counts as 1.
    public init(
        backoff: Backoff = Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(300)),
        maxAttempts: Int? = nil,
        maxAge: Duration? = .seconds(7 * 24 * 3600),
        maxRetryAfter: Duration = .seconds(3600),
        networkRecheck: Duration = .seconds(30),
        leaseDuration: Duration = .seconds(300),
        excerptLimit: Int = 1024
    ) {
        self.backoff = backoff
        self.maxAttempts = maxAttempts.map { max(1, $0) }
        self.maxAge = maxAge
        self.maxRetryAfter = maxRetryAfter
        self.networkRecheck = networkRecheck
        self.leaseDuration = leaseDuration
        self.excerptLimit = excerptLimit
    }

    /// The longest wait the policy can set: what a row carried over from another boot may keep.
    var longestDelay: Duration {
        max(backoff.cap, maxRetryAfter, networkRecheck)
    }
}
