import Foundation
import HTTPCore

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
    /// Suspends until the boot clock reads `untilUptime` seconds, or until the task is
    /// cancelled. The drain's timers (a flush, a lease renewal) sleep here, so a manual clock
    /// moves them too.
    public let sleep: @Sendable (_ untilUptime: Double) async -> Void

    /// A clock reading `now`; without `sleep`, waits are real time on the boot clock, for what
    /// is left by `now`.
    public init(now: @escaping @Sendable () -> QueueTime, sleep: (@Sendable (_ untilUptime: Double) async -> Void)? = nil) {
        self.now = now
        self.sleep = sleep ?? { uptime in
            guard let wait = Duration.clamped(seconds: uptime - now().uptime), wait > .zero else { return }
            await BootClock.sleep(for: wait)
        }
    }

    /// The system's wall clock and boot clock.
    public static let system = QueueClock {
        QueueTime(wall: Date(), boot: SystemBoot.id, uptime: SystemBoot.uptime())
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
    static func uptime() -> Double { BootClock.uptime() }
}
