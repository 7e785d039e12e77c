import Foundation
public import HTTPCore

/// When the queue sends an entry again, and when it gives up.
///
/// ```swift
/// var policy = DeliveryPolicy()
/// policy.maxAttempts = 8
/// policy.maxAge = .seconds(24 * 3600)   // Workbox's maxRetentionTime
/// policy.backoff = Backoff(base: .seconds(1), cap: .seconds(600))
/// ```
public struct DeliveryPolicy: Sendable, Hashable {
    /// The delay before retry n: full jitter under `min(cap, base × multiplierⁿ⁻¹)`.
    public var backoff: Backoff
    /// Attempts that may count against the budget before the entry is dead-lettered.
    public var maxAttempts: Int
    /// How long after enqueue (or a manual retry) an entry may still be sent; older entries are
    /// dead-lettered instead of sent. `nil` for no limit.
    public var maxAge: Duration?
    /// The longest `Retry-After` honoured; a longer one waits this long.
    public var maxRetryAfter: Duration
    /// How long an entry whose send found the network gone waits before being tried again when
    /// no monitor says the network is back (a monitor's "online" makes it due at once).
    public var networkRecheck: Duration
    /// How long a claim lasts. A live drainer renews the leases of its sends in flight at
    /// half this duration, so a long upload keeps its entry; a drainer that dies gives its
    /// entries back after at most this long.
    public var leaseDuration: Duration
    /// How much of an error response's body is kept with the entry.
    public var excerptLimit: Int
    /// Whether a drainer extends the leases of its sends in flight (at half their duration).
    /// Only tests turn it off, to play a drainer that hangs without dying.
    package var renewsLeases = true

    public init(
        backoff: Backoff = Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(300)),
        maxAttempts: Int = 10,
        maxAge: Duration? = .seconds(7 * 24 * 3600),
        maxRetryAfter: Duration = .seconds(3600),
        networkRecheck: Duration = .seconds(30),
        leaseDuration: Duration = .seconds(300),
        excerptLimit: Int = 1024
    ) {
        self.backoff = backoff
        self.maxAttempts = max(1, maxAttempts)
        self.maxAge = maxAge
        self.maxRetryAfter = maxRetryAfter
        self.networkRecheck = networkRecheck
        self.leaseDuration = leaseDuration
        self.excerptLimit = excerptLimit
    }
}

extension Date {
    /// This date moved by `duration`.
    func adding(_ duration: Duration) -> Date { addingTimeInterval(duration.seconds) }
}
