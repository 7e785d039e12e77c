import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The boot clock (`CLOCK_BOOTTIME` on Linux: seconds since boot, counting suspend, moved by no
/// wall-clock step), and sleeps measured on it by Courier itself.
///
/// `Task.sleep` hands the runtime an absolute deadline, which the runtime arms as an absolute
/// kernel timer. Anything that shifts such deadlines for the process (libfaketime, which shifts
/// every absolute `timerfd` deadline by its wall-clock offset, even with
/// `FAKETIME_DONT_FAKE_MONOTONIC`) then stalls every sleep. These sleeps never give the kernel
/// an absolute deadline: one thread reads the boot clock and waits in `poll` with a relative
/// timeout until the earliest sleeper is due, so a process whose wall clock is days off still
/// wakes on time. The queue's waits (the service's poll and next due time, the drain's timers,
/// watchdog and status timers) sleep here.
///
/// ```swift
/// await BootClock.sleep(for: .seconds(5))            // returns early if the task is cancelled
/// await BootClock.sleep(untilUptime: BootClock.uptime() + 1)
/// ```
package enum BootClock {
    /// Seconds since boot, counting suspend (`CLOCK_MONOTONIC` where there is no boot clock).
    package static func uptime() -> Double {
        var spec = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_BOOTTIME, &spec)
        #else
        clock_gettime(CLOCK_MONOTONIC, &spec)
        #endif
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// Suspends until the boot clock reads `deadline`, or until the task is cancelled.
    package static func sleep(untilUptime deadline: Double) async {
        await BootTimer.shared.sleep(until: deadline)
    }

    /// Suspends for `duration` on the boot clock, or until the task is cancelled.
    package static func sleep(for duration: Duration) async {
        guard duration > .zero else { return }
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        await BootTimer.shared.sleep(until: uptime() + seconds)
    }
}

/// The thread behind ``BootClock``'s sleeps: it waits in `poll` on a pipe, with a timeout of
/// what is left until the earliest sleeper's deadline, and resumes the sleepers that are due.
/// A new sleeper earlier than every other writes a byte to the pipe so that the thread
/// recomputes its timeout; others cost no system call. The thread starts with the first sleep
/// and lives as long as the process.
///
/// Sendable: the state is behind a lock; the pipe's descriptors are constants.
private final class BootTimer: Sendable {
    static let shared = BootTimer()

    private struct Sleeper {
        var deadline: Double
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
        /// The deadline the thread's current `poll` ends at (`.infinity`: none), so that only a
        /// sleeper earlier than it needs to wake the thread.
        var armedFor = Double.infinity
        var started = false
    }

    private let state = LockedBox(State())
    private let wakeRead: Int32
    private let wakeWrite: Int32

    private init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    func sleep(until deadline: Double) async {
        guard deadline > BootClock.uptime() else { return }
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (now, startThread, wakeThread) = state.withLock { state -> (Bool, Bool, Bool) in
                    // A cancellation handler that ran before this found nothing to resume.
                    if Task.isCancelled { return (true, false, false) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    let start = !state.started
                    state.started = true
                    let wake = deadline < state.armedFor
                    if wake { state.armedFor = deadline }
                    return (false, start, wake && !start)
                }
                if now {
                    continuation.resume()
                } else if startThread {
                    startThreadOrFallBack()
                } else if wakeThread {
                    var byte: UInt8 = 1
                    _ = write(wakeWrite, &byte, 1)
                }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume()
        }
    }

    private func startThreadOrFallBack() {
        guard wakeRead >= 0 else {
            // No pipe: every sleeper waits in a task of its own on the runtime's clock.
            let sleepers = state.withLock { state -> [Sleeper] in
                defer { state.sleepers.removeAll() }
                state.started = false
                return Array(state.sleepers.values)
            }
            for sleeper in sleepers {
                Task {
                    try? await Task.sleep(for: .seconds(max(0, sleeper.deadline - BootClock.uptime())))
                    sleeper.continuation.resume()
                }
            }
            return
        }
        let thread = Thread { [self] in run() }
        thread.name = "courier.boot-clock"
        thread.start()
    }

    private func run() {
        var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        var drain = [UInt8](repeating: 0, count: 64)
        while true {
            let now = BootClock.uptime()
            let (due, next) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Double) in
                var due: [CheckedContinuation<Void, Never>] = []
                var next = Double.infinity
                for (id, sleeper) in state.sleepers {
                    if sleeper.deadline <= now {
                        due.append(sleeper.continuation)
                        state.sleepers[id] = nil
                    } else {
                        next = min(next, sleeper.deadline)
                    }
                }
                state.armedFor = next
                return (due, next)
            }
            for continuation in due { continuation.resume() }
            // Rounded up, so the thread never wakes just before a deadline and spins.
            let timeout = next.isFinite ? Int32(min(Double(Int32.max), ((next - now) * 1000).rounded(.up))) : -1
            descriptor.revents = 0
            if poll(&descriptor, 1, timeout) > 0 {
                while read(wakeRead, &drain, drain.count) > 0 {}
            }
        }
    }
}
