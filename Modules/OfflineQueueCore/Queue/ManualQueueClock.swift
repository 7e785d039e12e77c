import Foundation
import HTTPCore

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

    /// The boot-clock readings the sleepers wait for, soonest first.
    public var sleeperDeadlines: [Double] { state.current.sleepers.values.map(\.uptime).sorted() }

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
