import Foundation

/// What one run of `count` calls (or entries) measured: calls per second, this process's CPU
/// per call in µs (user + system, `getrusage`: the server and any child process are other
/// processes), and the share of the machine's CPU time that was idle meanwhile (every
/// process's, from `/proc/stat`).
struct Measured: Sendable {
    var rate: Double
    var cpu: Double
    var idle: Double
    /// This process's context switches per call (``Variant/processContextSwitches()``): a
    /// thread that waits and is woken, a count the machine's load moves little.
    var switches: Double = 0

    /// `work` (`count` calls, returning calls per second), measured.
    static func of(count: Int, _ work: () async throws -> Double) async throws -> Measured {
        let cpu = Variant.processCPUTime(), ticks = machineTicks(), switches = Variant.processContextSwitches()
        let rate = try await work()
        let after = machineTicks()
        let idle = after.total > ticks.total ? (after.idle - ticks.idle) / (after.total - ticks.total) : 0
        return Measured(
            rate: rate, cpu: Bench.micros(Variant.processCPUTime() - cpu, count), idle: idle,
            switches: Double(Variant.processContextSwitches() - switches) / Double(max(1, count))
        )
    }

    /// The machine's idle and total CPU time so far, in ticks (`/proc/stat`'s first line).
    static func machineTicks() -> (idle: Double, total: Double) {
        guard let line = try? String(contentsOfFile: "/proc/stat", encoding: .utf8).split(separator: "\n").first else { return (0, 0) }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 5 else { return (0, 0) }
        return (fields[3] + fields[4], fields.reduce(0, +))   // idle + iowait, all
    }

    /// The share of one core this process uses while it waits `duration` doing nothing: work
    /// left running in the background (an unclosed queue, a session) that every figure
    /// measured next would pay for.
    static func idleCPU(over duration: Duration = .milliseconds(500)) async throws -> Double {
        let cpu = Variant.processCPUTime(), start = ContinuousClock.now
        try await Task.sleep(for: duration)
        let elapsed = ContinuousClock.now - start
        return Bench.micros(Variant.processCPUTime() - cpu, 1) / Bench.micros(elapsed, 1)
    }

    /// The machine's load averages over 1, 5 and 15 minutes (`/proc/loadavg`), as `uptime` prints them.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: ", ")
    }
}
