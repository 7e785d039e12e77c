public import Foundation
import HTTPCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    func wallTime(atUptime seconds: Double) -> Date {
        wall.addingTimeInterval(seconds - uptime)
    }
}

/// Where the queue reads the time: the system's clocks, or a test's.
///
/// ```swift
/// // A test that lives through a 24-hour outage without waiting for it:
/// let clock = ManualQueueClock()
/// configuration.clock = clock.queueClock
/// clock.advance(by: .seconds(3600))
/// ```
public struct QueueClock: Sendable {
    /// The current reading.
    public let now: @Sendable () -> QueueTime

    public init(now: @escaping @Sendable () -> QueueTime) {
        self.now = now
    }

    /// The system's wall clock and boot clock.
    public static let system = QueueClock {
        QueueTime(wall: Date(), boot: SystemBoot.id, uptime: SystemBoot.uptime())
    }
}

/// A clock a test moves by hand: both clocks advance together, and ``stepWall(by:)`` moves only
/// the wall clock, as an NTP step does.
public final class ManualQueueClock: Sendable {
    private let state: LockedBox<QueueTime>

    /// Starts at the system's current reading.
    public init(start: QueueTime = QueueClock.system.now()) {
        state = LockedBox(start)
    }

    /// The clock to put in ``QueueConfiguration/clock``.
    public var queueClock: QueueClock { QueueClock { [state] in state.current } }

    /// Moves both clocks on by `duration`.
    public func advance(by duration: Duration) {
        state.withLock { $0 = $0.advanced(by: duration) }
    }

    /// Moves the wall clock alone by `duration` (negative for a step back).
    public func stepWall(by duration: Duration) {
        state.withLock { $0.wall = $0.wall.addingTimeInterval(duration.seconds) }
    }

    /// Starts a new boot: the boot clock restarts near zero under a new boot identifier while
    /// the wall clock goes on.
    public func reboot(uptime: Double = 5) {
        state.withLock { $0 = QueueTime(wall: $0.wall, boot: UUID().uuidString.lowercased(), uptime: uptime) }
    }
}

/// This machine's boot: its identifier and the boot clock.
enum SystemBoot {
    /// Changes at every boot. On Linux, the kernel's random boot id; elsewhere, the wall time of
    /// boot to the second (stable enough to tell boots apart).
    static let id: String = {
        #if os(Linux)
        if let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !id.isEmpty { return id }
        }
        #endif
        return "boot-\(Int(Date().timeIntervalSince1970 - uptime()))"
    }()

    /// Seconds since boot, counting suspend.
    static func uptime() -> Double {
        var spec = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_BOOTTIME, &spec)
        #else
        clock_gettime(CLOCK_MONOTONIC, &spec)
        #endif
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
