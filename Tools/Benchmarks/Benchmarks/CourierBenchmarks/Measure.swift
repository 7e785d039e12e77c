import Benchmark
import CSyscallCount
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What every scenario measures, and how.
enum Measure {
    /// Operations per iteration: every figure per iteration is the figure of 1,000 operations.
    static var scaling: BenchmarkScalingFactor { .kilo }

    /// Every system call of every thread of this process (package-benchmark's own `syscalls`
    /// counts nothing on Linux), from a perf tracepoint counter; absent where tracefs is not
    /// mounted.
    static var syscalls: BenchmarkMetric { .custom("syscalls (all)", polarity: .prefersSmaller, useScalingFactor: true) }

    /// User plus system CPU time of this process in microseconds, from `getrusage` (the
    /// `cpuTotal` metric reads `/proc/self/stat`, in 10 ms scheduler ticks).
    static var cpu: BenchmarkMetric { .custom("CPU µs (getrusage)", polarity: .prefersSmaller, useScalingFactor: true) }

    /// The budgets' tolerances, per operation: a check fails when a scenario's p90 is above its
    /// committed p90 (`thresholds update`) by more than this. Allocations per operation move by
    /// less than one between runs; a growth of two or more fails. Write system calls on the
    /// SQLite file move by less than one per enqueue (a WAL checkpoint lands in some iterations
    /// and not others); one more index page written per enqueue (two writes: frame header and
    /// page) fails. On a socket they also count event-loop wake-ups, which move with the load.
    /// `scaling`: operations per iteration (the large bodies run one per iteration).
    static func budgets(
        allocationsPerOperation: Int = 2, writeSyscallsPerOperation: Double = 1.5, scaling: BenchmarkScalingFactor = scaling
    ) -> [BenchmarkMetric: BenchmarkThresholds] {
        [
            .mallocCountTotal: BenchmarkThresholds(absolute: [.p90: allocationsPerOperation * scaling.rawValue]),
            .writeSyscalls: BenchmarkThresholds(absolute: [.p90: Int(writeSyscallsPerOperation * Double(scaling.rawValue))]),
        ]
    }

    /// `COURIER_BENCH_ITERATIONS` (default 10) iterations of 1,000 operations after one warm-up
    /// iteration, at most 20 seconds a scenario. No `retainCount`/`releaseCount`: on Linux with
    /// Swift 6.3 package-benchmark counts them only through swift-runtime-interposer (the
    /// runtime's own hooks crash there), which this machine's package mirror does not carry.
    static func configuration(
        allocationsPerOperation: Int = 2, writeSyscallsPerOperation: Double = 1.5, scaling: BenchmarkScalingFactor = scaling
    ) -> Benchmark.Configuration {
        let iterations = ProcessInfo.processInfo.environment["COURIER_BENCH_ITERATIONS"].flatMap { Int($0) } ?? 10
        return Benchmark.Configuration(
            metrics: [.mallocCountTotal, .writeSyscalls, .readSyscalls, syscalls, cpu, .cpuTotal, .wallClock],
            timeUnits: .microseconds,
            warmupIterations: 1,
            scalingFactor: scaling,
            maxDuration: .seconds(20),
            maxIterations: iterations,
            thresholds: budgets(
                allocationsPerOperation: allocationsPerOperation, writeSyscallsPerOperation: writeSyscallsPerOperation, scaling: scaling
            )
        )
    }

    /// Runs `body` (the measured operations) between explicit start and stop, and records the
    /// system calls and CPU time it took.
    static func run(_ benchmark: Benchmark, _ body: () async throws -> Void) async throws {
        benchmark.startMeasurement()
        let calls = courier_syscall_count()
        let cpu = cpuMicroseconds()
        try await body()
        let cpuAfter = cpuMicroseconds()
        let callsAfter = courier_syscall_count()
        benchmark.stopMeasurement()
        if calls >= 0 && callsAfter >= 0 { benchmark.measurement(syscalls, Int(callsAfter - calls)) }
        benchmark.measurement(self.cpu, cpuAfter - cpu)
    }

    static func cpuMicroseconds() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + Int(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }

    /// Operations per iteration.
    static var count: Int { scaling.rawValue }
}
