import Foundation
import HTTPCore
package import QueueTestSupport

/// Random programs run on a store and on the model side by side; a divergence is shrunk to a
/// minimal program and reported with the seed and the command that replay it.
package struct ModelCheck {
    package struct Options: Sendable {
        package var steps = 2_000
        package var kinds: [StoreKind] = StoreKind.allCases
        /// The first program's seed; the next ones follow from it.
        package var seed: UInt64 = 1
        package var drainers = 3
        /// Steps a program has at most.
        package var length = 60
        /// Programs run at once, each on a store of its own.
        package var jobs = 1

        package init(steps: Int = 2_000, kinds: [StoreKind] = StoreKind.allCases, seed: UInt64 = 1, drainers: Int = 3, length: Int = 60, jobs: Int = 1) {
            self.steps = steps
            self.kinds = kinds
            self.seed = seed
            self.drainers = drainers
            self.length = length
            self.jobs = jobs
        }

        /// From the environment `Tools/model-check` sets: `COURIER_MODEL_STEPS`,
        /// `COURIER_MODEL_STORE` (sqlite, postgres, memory or all), `COURIER_MODEL_SEED`,
        /// `COURIER_MODEL_DRAINERS`, `COURIER_MODEL_LENGTH`; `defaults` for what is not set.
        package static func fromEnvironment(_ defaults: Options) -> Options {
            let environment = ProcessInfo.processInfo.environment
            var options = defaults
            if let steps = environment["COURIER_MODEL_STEPS"].flatMap(Int.init) { options.steps = steps }
            if let store = environment["COURIER_MODEL_STORE"], store != "all" {
                options.kinds = store.split(separator: ",").compactMap { StoreKind(rawValue: String($0)) }
            }
            if let seed = environment["COURIER_MODEL_SEED"].flatMap(UInt64.init) { options.seed = seed }
            if let drainers = environment["COURIER_MODEL_DRAINERS"].flatMap(Int.init) { options.drainers = max(1, min(4, drainers)) }
            if let length = environment["COURIER_MODEL_LENGTH"].flatMap(Int.init) { options.length = max(1, length) }
            if let jobs = environment["COURIER_MODEL_JOBS"].flatMap(Int.init) { options.jobs = max(1, jobs) }
            return options
        }
    }

    package struct Found: CustomStringConvertible {
        var kind: StoreKind
        var seed: UInt64
        var length: Int
        var drainers: Int
        var divergence: Divergence
        var shrunk: ModelProgram
        var shrunkDivergence: Divergence

        package var description: String {
            """
            \(kind.rawValue): the program of seed \(seed) (\(length) steps, \(drainers) drainers) diverged at \(divergence)
            shrunk to \(shrunk.steps.count) steps, diverging at \(shrunkDivergence):
            \(shrunk)
            replay: Tools/model-check --store \(kind.rawValue) --seed \(seed) --steps \(length) --drainers \(drainers)
            """
        }
    }

    package struct Report: CustomStringConvertible {
        package var programs = 0
        package var steps = 0
        package var found: [Found] = []
        var seconds = 0.0
        var timings: [String: Double] = [:]
        var reached: [String: Int] = [:]
        /// On PostgreSQL, what the programs reached of its PL/pgSQL.
        var coverage = PLpgSQLCoverage()
        /// The statements and branches not reached that Docs/ModelCheck.md does not show unreachable.
        package var unexplained: [String] {
            let documented = ModelCheck.documentedUnreachable
            return coverage.unreached.filter { line in !documented.contains { line.hasPrefix($0.function + ":") && line.hasSuffix(": " + $0.source) } }
        }

        package var description: String {
            "\(programs) programs, \(steps) steps, \(found.count) divergences, \(String(format: "%.1f", seconds)) s"
                + (ProcessInfo.processInfo.environment["COURIER_MODEL_PROFILE"] == nil ? ""
                : "\n" + timings.sorted { $0.value > $1.value }.map { "  \($0.key): \(String(format: "%.1f", $0.value)) s" }.joined(separator: "\n"))
            + "\nreached: " + reached.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            + found.map { "\n\n" + $0.description }.joined()
            + (coverage.isEmpty ? "" : "\n" + coverage.description
                + (coverage.unreached.isEmpty ? "" : "\n  not reached:\n" + coverage.unreached.map { "    " + $0 }.joined(separator: "\n"))
                + (unexplained.isEmpty ? "" : "\n  not reached, and not shown unreachable in Docs/ModelCheck.md: \(unexplained.count)"))
        }
    }

    /// The PL/pgSQL statements and branches Docs/ModelCheck.md shows unreachable: its lines
    /// `- unreachable: FUNCTION: SOURCE` (the source as the coverage prints it).
    static let documentedUnreachable: [(function: String, source: String)] = {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Docs/ModelCheck.md")
        guard let text = try? String(contentsOf: docs, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("- unreachable: ") else { return nil }
            let rest = line.dropFirst("- unreachable: ".count)
            guard let colon = rest.firstIndex(of: ":") else { return nil }
            return (String(rest[..<colon]), String(rest[rest.index(after: colon)...]).trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")))
        }
    }()

    /// The program of `seed`, as it would run.
    package static func dump(seed: UInt64, length: Int, drainers: Int) -> String {
        ModelProgram.random(seed: seed, length: length, drainers: drainers, reboots: ProcessInfo.processInfo.environment["COURIER_MODEL_DUMP"] != "memory").description
    }

    /// Program 0 has the seed given, so the seed a divergence prints replays its program; the
    /// next ones a mix of it and their number (not the base plus a multiple of the generator's
    /// own increment: such streams would be the same stream shifted by one draw a program).
    static func seed(_ base: UInt64, program n: Int) -> UInt64 {
        guard n > 0 else { return base }
        var mixer = SeededGenerator(seed: base ^ (UInt64(n) &* 0xD1B5_4A32_D192_ED03))
        return mixer.next()
    }

    /// Runs programs on `kind` until `options.steps` steps have run, `options.jobs` at once, or
    /// until a divergence is found: then the first program (by number) that diverged is shrunk.
    package static func run(_ kind: StoreKind, _ options: Options) async -> Report {
        var report = Report()
        let started = Date()
        // Program n has the seed `seed(options.seed, program: n)` and the length left of the budget.
        var plan: [(seed: UInt64, length: Int)] = []
        var planned = 0
        while planned < options.steps {
            let length = min(options.length, options.steps - planned)
            plan.append((seed(options.seed, program: plan.count), length))
            planned += length
        }
        var failed: [(index: Int, divergence: Divergence, program: ModelProgram)] = []
        await withTaskGroup(of: (Int, Divergence?, ModelProgram, [String: Double], PLpgSQLCoverage, [String: Int]).self) { group in
            var next = 0
            func start() {
                guard next < plan.count else { return }
                let index = next
                let (seed, length) = plan[index]
                next += 1
                group.addTask {
                    let program = ModelProgram.random(seed: seed, length: length, drainers: options.drainers, reboots: kind != .memory)
                    var timings: [String: Double] = [:]
                    var coverage = PLpgSQLCoverage()
                    var reached: [String: Int] = [:]
                    let divergence = await failure(of: program, on: kind, timings: &timings, coverage: &coverage, reached: &reached)
                    return (index, divergence, program, timings, coverage, reached)
                }
            }
            for _ in 0..<max(1, options.jobs) { start() }
            while let (index, divergence, program, timings, coverage, reached) = await group.next() {
                report.programs += 1
                report.coverage.merge(coverage)
                report.reached.merge(reached, uniquingKeysWith: +)
                report.steps += program.steps.count
                report.timings.merge(timings, uniquingKeysWith: +)
                if let divergence { failed.append((index, divergence, program)) }
                if failed.isEmpty { start() }
            }
        }
        if let first = failed.min(by: { $0.index < $1.index }) {
            let (shrunk, last) = await shrink(first.program, on: kind, divergence: first.divergence)
            report.found.append(Found(
                kind: kind, seed: plan[first.index].seed, length: plan[first.index].length, drainers: options.drainers,
                divergence: first.divergence, shrunk: shrunk, shrunkDivergence: last
            ))
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Where `program` diverges on a fresh store of `kind`, if it does.
    static func failure(of program: ModelProgram, on kind: StoreKind) async -> Divergence? {
        var timings: [String: Double] = [:]
        var coverage = PLpgSQLCoverage()
        var reached: [String: Int] = [:]
        return await failure(of: program, on: kind, timings: &timings, coverage: &coverage, reached: &reached)
    }

    static func failure(
        of program: ModelProgram, on kind: StoreKind, timings: inout [String: Double], coverage: inout PLpgSQLCoverage,
        reached: inout [String: Int]
    ) async -> Divergence? {
        let runner: ModelRunner
        let opening = ContinuousClock.now
        do {
            runner = try await ModelRunner(kind: kind)
        } catch {
            return Divergence(step: -1, what: "the store could not be opened: \(error)")
        }
        var found: Divergence?
        var index = 0
        do {
            for step in program.steps {
                try await runner.run(step, index: index)
                index += 1
            }
            try await runner.compare(step: max(0, index - 1), deep: true)
        } catch let divergence as Divergence {
            found = divergence
        } catch {
            found = Divergence(step: index, what: "the store threw where the model did not: \(error)")
        }
        await runner.remove()
        coverage.merge(runner.coverage)
        reached.merge(runner.reached, uniquingKeysWith: +)
        timings.merge(runner.timings, uniquingKeysWith: +)
        timings["opening and removing stores", default: 0] += (ContinuousClock.now - opening).seconds - runner.timings.values.reduce(0, +)
        return found
    }

    /// The smallest program found that still diverges: steps after the divergence dropped,
    /// then runs of steps removed while it still diverges (halving their length), then the
    /// entries of batches and the outcomes of settlements removed one at a time.
    static func shrink(_ program: ModelProgram, on kind: StoreKind, divergence: Divergence) async -> (ModelProgram, Divergence) {
        var current = ModelProgram(steps: Array(program.steps.prefix(max(1, divergence.step + 1))))
        var last = divergence
        var tries = 0
        func attempt(_ candidate: ModelProgram) async -> Bool {
            tries += 1
            guard tries < 2_000, let found = await failure(of: candidate, on: kind) else { return false }
            current = ModelProgram(steps: Array(candidate.steps.prefix(max(1, found.step + 1))))
            last = found
            return true
        }
        var chunk = max(1, current.steps.count / 2)
        while chunk >= 1 {
            var start = 0
            var removed = false
            while start < current.steps.count {
                var steps = current.steps
                steps.removeSubrange(start..<min(steps.count, start + chunk))
                if !steps.isEmpty, await attempt(ModelProgram(steps: steps)) { removed = true } else { start += chunk }
            }
            if !removed { chunk /= 2 }
        }
        // Each step made smaller.
        var index = 0
        while index < current.steps.count {
            for smaller in smaller(current.steps[index]) {
                var steps = current.steps
                steps[index] = smaller
                if await attempt(ModelProgram(steps: steps)) { break }
            }
            index += 1
        }
        return (current, last)
    }

    /// Smaller forms of a step: one entry or outcome fewer, plain options.
    static func smaller(_ step: ModelProgram.Step) -> [ModelProgram.Step] {
        switch step {
        case .enqueue(let specs) where specs.count > 1:
            return specs.indices.map { index in .enqueue(specs.enumerated().filter { $0.offset != index }.map(\.element)) }
        case .enqueue(let specs):
            guard var spec = specs.first else { return [] }
            var forms: [ModelProgram.Step] = []
            if spec.sealed { spec.sealed = false; forms.append(.enqueue([spec])) }
            if spec.priority != 0 { spec.priority = 0; forms.append(.enqueue([spec])) }
            if spec.wait != 0 { spec.wait = 0; forms.append(.enqueue([spec])) }
            return forms
        case .drain(let drain):
            var forms: [ModelProgram.Step] = drain.outcomes.indices.map { index in
                var fewer = drain
                fewer.outcomes.remove(at: index)
                return .drain(fewer)
            }
            if drain.once { forms.append(.drain(ModelProgram.Drain(slot: drain.slot, outcomes: drain.outcomes, limit: drain.limit, lease: drain.lease, once: false, reclaim: drain.reclaim))) }
            return forms
        case .settle(let slot, let outcomes) where outcomes.count > 1:
            return outcomes.indices.map { index in .settle(slot: slot, outcomes: outcomes.enumerated().filter { $0.offset != index }.map(\.element)) }
        default:
            return []
        }
    }
}
