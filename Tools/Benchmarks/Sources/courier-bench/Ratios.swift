// `courier-bench --goals`: every goal of the performance issue in one run, each Courier/raw
// throughput ratio with its noise shown:
//   - rounds interleaved A B, then B A (the raw side A, Courier B), an even number, at least 6;
//   - the ratio is the geometric mean of the per-round ratios, with a bootstrap 95 % interval
//     (rounds resampled whole); a goal is met when the interval's lower end is at the goal;
//   - the client process's CPU per operation (user + system, `getrusage`) of each side;
//   - an A/A control in every round: the raw side again, in a child process (`RawTwin`); a run
//     whose A/A ratio is outside 0.97–1.03 is marked DISCARDED;
//   - BENCH_ISOLATED=1: the raw and Courier sides each in a child process of their own too
//     (`Ratios.isolated`), so that the three processes differ only in the side they run.
// The PostgreSQL figures need COURIER_BENCH_POSTGRES_URL (and PGPASSWORD); the scale-out
// goal (claims/s rising from 1 to 4 drainer processes) is judged the same way on the ratio of
// 4 processes to 1. BENCH_GOALS=model-GET,enqueue,… runs some scenarios only.
import BenchSupport
import Foundation
import PostgresNIO

enum Ratios {
    /// The A/A ratio outside which a run is discarded.
    static let control = 0.97...1.03

    /// `BENCH_ISOLATED=1`: the raw and Courier sides each in a child process of their own, as
    /// the A/A control's is, instead of both in this process. In this process each side runs
    /// where the other has run too (its heap, its threads, its malloc arenas and thresholds),
    /// and the A/A child has only ever run the raw side, so the control compares processes
    /// with different histories, not only the machine's noise.
    static var isolated: Bool { ProcessInfo.processInfo.environment["BENCH_ISOLATED"] == "1" }

    /// One row of the table.
    struct Row {
        let scenario: String
        /// "≥ 0.97", or "> 1.00" for the curve.
        let goal: String
        let ratio: Double
        let interval: ClosedRange<Double>
        let met: Bool
        /// CPU per operation, raw and Courier (µs), when this process ran both.
        let cpu: (raw: Double, courier: Double)?
        /// The A/A ratio and its interval, when the row has one.
        let control: (ratio: Double, interval: ClosedRange<Double>)?
        /// Why the scenario has no figures: it failed (the run goes on with the others).
        var failure: String? = nil

        var discarded: Bool { control.map { !Ratios.control.contains($0.ratio) } ?? false }

        static func failed(_ scenario: String, goal: String, _ error: any Error) -> Row {
            Row(scenario: scenario, goal: goal, ratio: 0, interval: 0...0, met: false, cpu: nil, control: nil, failure: "\(error)")
        }
    }

    /// `sealed`: the scenarios of `courier-bench --sealed` (sealing on against off) instead
    /// of the goals of the performance issue.
    static func run(options: Options, sealed: Bool = false) async throws {
        let only = ProcessInfo.processInfo.environment["BENCH_ONLY"]
        if let only, Goals.diagnostics.contains(only) {
            let server = try ServerProcess.start()
            defer { server.stop() }
            try await Goals.diagnostic(only, server: server, rounds: options.rounds)
            return
        }
        guard options.rounds >= 6, options.rounds.isMultiple(of: 2) else {
            throw BenchError("\(sealed ? "--sealed" : "--goals") needs an even number of rounds, at least 6 (A B, then B A; --rounds \(options.rounds))")
        }
        let picked = ProcessInfo.processInfo.environment["BENCH_GOALS"].map { Set($0.split(separator: ",").map(String.init)) }
        let database = sealed ? nil : try PostgresBench.configuredServer()
        let server = try ServerProcess.start()
        defer { server.stop() }
        let context = try RatioScenario.Context(port: server.port, concurrency: options.concurrency, database: database)
        defer { try? FileManager.default.removeItem(at: context.folder) }
        let startLoad = Measured.loadAverage()
        print("courier-bench \(sealed ? "--sealed" : "--goals"): \(options.rounds) rounds (A B, B A, …), \(options.concurrency) concurrent callers, A/A child per scenario\(isolated ? ", each side in a child of its own (BENCH_ISOLATED=1)" : ""); load average \(startLoad); \(Date())")

        // A raw pool to drop the PostgreSQL schemas made, at the end.
        let dropper = database?.rawClient(connections: 2)
        let runner = dropper.map { client in Task { await client.run() } }
        defer { runner?.cancel() }

        var rows: [Row] = []
        var skipped: [String] = []
        for scenario in RatioScenario.allCases where scenario.isSealing == sealed && picked?.contains(scenario.rawValue) ?? true {
            if scenario == .drainPostgres, database == nil {
                skipped.append(scenario.rawValue)
                continue
            }
            do {
                rows.append(try await measure(scenario, context: context, options: options))
            } catch {
                print("  failed: \(error)")
                rows.append(.failed(scenario.figure, goal: String(format: "≥ %.2f", scenario.goal), error))
            }
        }
        if sealed {
            // No PostgreSQL scale-out curve here.
        } else if let database, picked?.contains("curve") ?? true {
            do {
                rows.append(try await curve(database: database, context: context, rounds: options.rounds))
            } catch {
                print("  failed: \(error)")
                rows.append(.failed(curveFigure, goal: "> 1.00", error))
            }
        } else if database == nil {
            skipped.append("curve")
        }
        if let dropper { await PostgresBench.drop(context.made.all, raw: dropper) }

        table(rows, sealed: sealed)
        if !skipped.isEmpty { print("\nskipped: \(skipped.joined(separator: ", ")). \(PostgresBench.skipped)") }
        let discarded = rows.filter(\.discarded)
        print(discarded.isEmpty
            ? "\nA/A controls: all within \(control.lowerBound)–\(control.upperBound); the run counts."
            : "\nRUN DISCARDED: the A/A control is outside \(control.lowerBound)–\(control.upperBound) for \(discarded.map(\.scenario).joined(separator: "; ")).")
        print("load average: \(startLoad) at the start, \(Measured.loadAverage()) at the end")
    }

    /// One scenario, its ratio and A/A control: its sides built, its child started, its
    /// ``rounds(_:count:warmup:rounds:)`` (Courier follows the raw side in one round and
    /// precedes it in the next, as does the child), everything closed.
    static func measure(_ scenario: RatioScenario, context: RatioScenario.Context, options: Options) async throws -> Row {
        let (count, warmup) = scenario.counts(options)
        let idle = try await Measured.idleCPU()
        print("\n\(scenario.figure): \(count) \(scenario.operations) per side and round; load average \(Measured.loadAverage()); this process idle at \(String(format: "%.1f", idle * 100)) % of a core")
        let samples: [[Measured]]
        if isolated {
            guard scenario != .drainPostgres else { throw BenchError("BENCH_ISOLATED=1 does not run the PostgreSQL drain (its Courier side runs in this process)") }
            // Each side in a child of its own, the A/A control's too: three processes that
            // each run one side only, so no side runs in a process another side has used.
            let port = context.port, concurrency = options.concurrency
            let children = [
                try await RawTwin(scenario, .raw, name: "raw, in its child", port: port, concurrency: concurrency),
                try await RawTwin(scenario, .courier, name: "Courier, in its child", port: port, concurrency: concurrency),
                try await RawTwin(scenario, .raw, name: "raw, in the A/A child", port: port, concurrency: concurrency),
            ]
            do {
                samples = try await rounds(children.map(\.side), count: count, warmup: warmup, rounds: options.rounds)
            } catch {
                for child in children { child.abandon() }
                throw error
            }
            for child in children { try await child.finish() }
        } else {
            let sides = scenario.sides(context)
            do {
                let twin = try await RawTwin(scenario, port: context.port, concurrency: options.concurrency)
                do {
                    samples = try await rounds([sides.raw, sides.courier, twin.side], count: count, warmup: warmup, rounds: options.rounds)
                } catch {
                    twin.abandon()
                    throw error
                }
                try await twin.finish()
            } catch {
                try? await sides.close()
                throw error
            }
            try await sides.close()
        }

        let a = samples[0], b = samples[1], twinSamples = samples[2]
        let ratios = zip(b, a).map { $0.rate / $1.rate }, controls = zip(twinSamples, a).map { $0.rate / $1.rate }
        let interval = Bootstrap.interval(ratios)
        let cpu = (raw: mean(a.map(\.cpu)), courier: mean(b.map(\.cpu)))
        print("  medians: raw \(Bench.format(Goals.median(a.map(\.rate))))/s, Courier \(Bench.format(Goals.median(b.map(\.rate))))/s, A/A child \(Bench.format(Goals.median(twinSamples.map(\.rate))))/s; CPU µs per \(scenario.operation): raw \(String(format: "%.1f", cpu.raw)), Courier \(String(format: "%.1f", cpu.courier)), A/A child \(String(format: "%.1f", mean(twinSamples.map(\.cpu)))); machine idle \(Int((mean((a + b).map(\.idle)) * 100).rounded())) %")
        return Row(
            scenario: scenario.figure, goal: String(format: "≥ %.2f", scenario.goal), ratio: Bootstrap.geometricMean(ratios), interval: interval,
            met: interval.lowerBound >= scenario.goal, cpu: cpu, control: (Bootstrap.geometricMean(controls), Bootstrap.interval(controls))
        )
    }

    /// A warm-up of each side, then `rounds` rounds of `all` (raw, Courier, the raw side in
    /// the child: A, B, A′) in the order A B A′ and A′ B A in turn; each side's samples.
    static func rounds(_ all: [RatioScenario.Side], count: Int, warmup: Int, rounds: Int) async throws -> [[Measured]] {
        for side in all { _ = try await side.measure(0, warmup) }
        var samples: [[Measured]] = all.map { _ in [] }
        for round in 1...rounds {
            for index in round.isMultiple(of: 2) ? Array(all.indices.reversed()) : Array(all.indices) {
                samples[index].append(try await all[index].measure(round, count))
            }
            print("  round \(round): " + all.indices.map { index in
                "\(all[index].name) \(Bench.format(samples[index].last!.rate))/s, \(String(format: "%.1f", samples[index].last!.cpu)) µs CPU"
            }.joined(separator: "; "))
            // Written out now, in order with the children's lines and any error, when a pipe
            // or a file takes them.
            fflush(nil)
        }
        return samples
    }

    static let curveFigure = "PostgreSQL claims/s, 4 drainer processes vs 1 (rising)"

    /// The scale-out goal: claims per second of 4 drainer processes against 1 (and 2, shown),
    /// every point in every round, the order up and down the curve in turn.
    static func curve(database: PostgresBench.Server, context: RatioScenario.Context, rounds: Int) async throws -> Row {
        let processes = [1, 2, 4], entries = 8_000
        print("\nPostgreSQL scale-out: \(entries) entries per point, drainer processes \(processes); load average \(Measured.loadAverage())")
        var rates: [Int: [Double]] = [:]
        for round in 1...rounds {
            for count in round.isMultiple(of: 2) ? processes.reversed() : processes {
                let schema = "\(context.tag)_goal_scale_\(count)_\(round)"
                rates[count, default: []].append(try await PostgresBench.curvePoint(database: database, schema: schema, processes: count, entries: entries, port: context.port, made: context.made))
            }
            print("  round \(round): " + processes.map { "\($0) process\($0 == 1 ? "" : "es") \(Bench.format(rates[$0]!.last!)) claims/s" }.joined(separator: ", "))
        }
        PostgresBench.curve(processes.map { ($0, rates[$0]!) }, entries: entries)
        let ratios = zip(rates[4]!, rates[1]!).map(/)
        let interval = Bootstrap.interval(ratios)
        return Row(
            scenario: curveFigure, goal: "> 1.00", ratio: Bootstrap.geometricMean(ratios),
            interval: interval, met: interval.lowerBound > 1, cpu: nil, control: nil
        )
    }

    static func table(_ rows: [Row], sealed: Bool = false) {
        print("\n| scenario | goal | ratio | 95 % interval | verdict | CPU µs/op \(sealed ? "unsealed / sealed" : "raw / Courier") | A/A ratio (95 % interval) |")
        print("|---|---|---:|---|---|---:|---|")
        for row in rows {
            if let failure = row.failure {
                print("| \(row.scenario) | \(row.goal) | – | – | **failed**: \(failure) | – | – |")
                continue
            }
            let verdict = row.discarded ? "discarded (A/A)" : row.met ? "met" : "**not met**"
            let cpu = row.cpu.map { String(format: "%.1f / %.1f", $0.raw, $0.courier) } ?? "–"
            let control = row.control.map { String(format: "%.3f (%.3f–%.3f)", $0.ratio, $0.interval.lowerBound, $0.interval.upperBound) + (row.discarded ? " **out**" : "") } ?? "–"
            print("| \(row.scenario) | \(row.goal) | \(String(format: "%.3f", row.ratio)) | \(String(format: "%.3f–%.3f", row.interval.lowerBound, row.interval.upperBound)) | \(verdict) | \(cpu) | \(control) |")
        }
    }

    static func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(1, values.count)) }
}
