/// Exponential backoff with full jitter and a cap.
///
/// The n-th retry (n from 1) waits a random duration in `0...min(cap, base × multiplierⁿ⁻¹)`.
/// Full jitter spreads clients that failed together, so they do not come back together
/// (see "Exponential Backoff And Jitter", AWS Architecture Blog, 2015).
public struct Backoff: Sendable, Hashable {
    /// The ceiling of the first retry's delay.
    public var base: Duration
    /// How much the ceiling grows per retry.
    public var multiplier: Double
    /// The largest ceiling.
    public var cap: Duration
    /// Whether to pick a random delay below the ceiling (full jitter) or wait the ceiling.
    public var jitter: Bool

    /// A backoff whose first retry waits up to `base` (200 ms) and each later one up to
    /// `multiplier` (2) times as long as the one before, never more than `cap` (30 s); with
    /// full jitter unless `jitter` is `false`.
    public init(base: Duration = .milliseconds(200), multiplier: Double = 2, cap: Duration = .seconds(30), jitter: Bool = true) {
        self.base = base
        self.multiplier = multiplier
        self.cap = cap
        self.jitter = jitter
    }

    /// The ceiling for retry number `retry` (1 for the first retry).
    public func ceiling(forRetry retry: Int) -> Duration {
        let exponent = Double(max(0, retry - 1))
        let seconds = base.seconds * pow2(multiplier, exponent)
        return seconds >= cap.seconds ? cap : .seconds(seconds)
    }

    /// The delay before retry number `retry`, with `unitRandom` a value in `0..<1`.
    public func delay(forRetry retry: Int, unitRandom: Double) -> Duration {
        let ceiling = ceiling(forRetry: retry)
        return jitter ? .seconds(ceiling.seconds * min(max(unitRandom, 0), 1)) : ceiling
    }

    private func pow2(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        var remaining = Int(exponent)
        while remaining > 0 && result < 1e12 {
            result *= base
            remaining -= 1
        }
        return result
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The longest duration made from outside input: a hundred years. Anything longer is
    /// a mistake or an attack, and converting it to whole milliseconds would overflow.
    public static let longestInput = Duration.seconds(100 * 365 * 86_400)

    /// `seconds` as a duration no shorter than zero and no longer than `limit`; `nil` for
    /// NaN or infinity. Safe for any `Double`, where `.milliseconds(Int64(seconds * 1000))`
    /// traps on a large or non-finite value.
    public static func clamped(seconds: Double, to limit: Duration = .longestInput) -> Duration? {
        guard seconds.isFinite else { return nil }
        if seconds <= 0 { return .zero }
        if seconds >= limit.seconds { return limit }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// The duration in whole milliseconds, rounded down, saturating at `Int64`'s bounds.
    public var saturatingMilliseconds: Int64 {
        let parts = components
        let (product, overflow) = parts.seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return parts.seconds < 0 ? .min : .max }
        let (sum, overflowed) = product.addingReportingOverflow(parts.attoseconds / 1_000_000_000_000_000)
        if overflowed { return parts.seconds < 0 ? .min : .max }
        return sum
    }
}
