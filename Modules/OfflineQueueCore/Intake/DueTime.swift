public import Foundation
import HTTPCore

/// An instant on the boot clock: when an entry, or the queue, is next due.
///
/// The engine waits for it on the boot clock (``remaining(at:)``); people see it as a wall time,
/// converted by the clock of the moment it is shown (``wallTime(at:)``), so a wall clock that
/// is days off, in this process or in the one that set a backoff, neither delays a wait nor
/// shows a wrong time.
public struct DueTime: Sendable, Hashable, Codable {
    /// The boot ``uptime`` counts in (``QueueTime/boot``).
    public var boot: String
    /// Seconds on that boot's clock.
    public var uptime: Double

    /// The instant `uptime` seconds into the boot `boot`, on its boot clock.
    public init(boot: String, uptime: Double) {
        self.boot = boot
        self.uptime = uptime
    }

    /// What is left until this instant by the boot clock of `now`: zero once it has passed,
    /// and zero for an instant of another boot (its entry is carried over to this boot by the
    /// next drain, which decides its wait).
    public func remaining(at now: QueueTime) -> Duration {
        guard boot == now.boot else { return .zero }
        return Duration.clamped(seconds: uptime - now.uptime) ?? .zero
    }

    /// The wall time this instant is at, by the wall clock of `now`: for showing it. An
    /// instant of another boot shows as `now`.
    public func wallTime(at now: QueueTime) -> Date {
        boot == now.boot ? now.wallTime(atUptime: uptime) : now.wall
    }
}
