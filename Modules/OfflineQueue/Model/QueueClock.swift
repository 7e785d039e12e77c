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

/// A clock a test moves by hand: both clocks advance together, and ``stepWall(by:)`` moves only
/// the wall clock, as an NTP step does. Sleepers (the drain's flush and lease-renewal timers)
/// wake when ``advance(by:)`` passes their time, never by themselves.
public final class ManualQueueClock: Sendable {
    private struct State {
        var time: QueueTime
        var sleepers: [UUID: (uptime: Double, continuation: CheckedContinuation<Void, Never>)] = [:]

        /// Takes the sleepers whose time has come (every one, with `all`).
        mutating func due(all: Bool = false) -> [CheckedContinuation<Void, Never>] {
            let woken = sleepers.filter { all || $0.value.uptime <= time.uptime }
            for id in woken.keys { sleepers[id] = nil }
            return woken.values.map(\.continuation)
        }
    }

    private let state: LockedBox<State>

    /// Starts at the system's current reading.
    public init(start: QueueTime = QueueClock.system.now()) {
        state = LockedBox(State(time: start))
    }

    /// The clock to put in ``QueueConfiguration/clock``.
    public var queueClock: QueueClock {
        QueueClock(now: { [state] in state.current.time }, sleep: { [weak self] uptime in await self?.sleep(until: uptime) })
    }

    /// How many sleepers wait for the clock to move.
    public var sleepers: Int { state.current.sleepers.count }

    /// Moves both clocks on by `duration`, waking the sleepers whose time has come.
    public func advance(by duration: Duration) {
        let woken = state.withLock { state in
            state.time = state.time.advanced(by: duration)
            return state.due()
        }
        for continuation in woken { continuation.resume() }
    }

    /// Moves the wall clock alone by `duration` (negative for a step back).
    public func stepWall(by duration: Duration) {
        state.withLock { $0.time.wall = $0.time.wall.addingTimeInterval(duration.seconds) }
    }

    /// Starts a new boot: the boot clock restarts near zero under a new boot identifier while
    /// the wall clock goes on. Sleepers of the old boot wake.
    public func reboot(uptime: Double = 5) {
        let woken = state.withLock { state in
            state.time = QueueTime(wall: state.time.wall, boot: UUID().uuidString.lowercased(), uptime: uptime)
            return state.due(all: true)
        }
        for continuation in woken { continuation.resume() }
    }

    private func sleep(until uptime: Double) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.time.uptime >= uptime || Task.isCancelled { return true }
                    state.sleepers[id] = (uptime, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume()
        }
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
