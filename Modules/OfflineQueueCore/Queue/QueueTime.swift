public import Foundation
import HTTPCore

/// A reading of the queue's two clocks at one moment.
///
/// Every rule of the queue that measures time (backoff, leases, the age limit) uses the *boot
/// clock*: seconds since this machine booted, counting suspend, which no NTP step, `date -s`
/// or time-zone change moves. The wall clock is kept only for what people read (`createdAt`,
/// `nextAttemptAt`) and to carry an entry's age across a reboot, when the boot clock starts
/// again from zero. See "Time" in `Docs/OfflineQueue.md`.
public struct QueueTime: Sendable, Hashable {
    /// The wall clock.
    public var wall: Date
    /// Which boot ``uptime`` counts from (`/proc/sys/kernel/random/boot_id` on Linux).
    public var boot: String
    /// Seconds on the boot clock (`CLOCK_BOOTTIME`).
    public var uptime: Double

    /// A reading of `wall` on the wall clock and `uptime` seconds into the boot `boot`.
    public init(wall: Date, boot: String, uptime: Double) {
        self.wall = wall
        self.boot = boot
        self.uptime = uptime
    }

    /// This reading moved on by `duration` on both clocks.
    public func advanced(by duration: Duration) -> QueueTime {
        QueueTime(wall: wall.addingTimeInterval(duration.seconds), boot: boot, uptime: uptime + duration.seconds)
    }

    /// The wall time `seconds` of boot clock from this reading, for showing a boot-clock
    /// instant to people.
    package func wallTime(atUptime seconds: Double) -> Date {
        wall.addingTimeInterval(seconds - uptime)
    }
}
