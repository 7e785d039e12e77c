// Per-operation counts of Courier's hot paths, each scenario beside the raw call it is
// compared with: allocations, write system calls, all system calls, CPU and wall time.
// Each iteration runs 1,000 operations (`scalingFactor: .kilo`), so a figure per iteration
// divided by 1,000 is the figure per operation; `--scale` does that division in the output.
//
//   swift build -c release --package-path Tools/Benchmarks --product bench-server
//   swift package --package-path Tools/Benchmarks benchmark
//
// The committed budgets (`Thresholds/`) cover the Courier scenarios' allocations and write
// system calls; `Tools/test` checks them. See Docs/Benchmarks.md.
import Benchmark

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = Measure.configuration()
    HTTPScenarios.register()
    DefaultsScenarios.register()
    QueueScenarios.register()
    SealingScenarios.register()
    PostgresScenarios.register()
}
