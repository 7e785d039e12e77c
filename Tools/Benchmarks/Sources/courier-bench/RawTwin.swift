import BenchSupport
import Foundation

/// One side of a scenario in a child process of its own, with clients of its own, made by the
/// same code as the parent's (`courier-bench --goals-side SCENARIO raw|courier PORT
/// CONCURRENCY`): the A/A control's second raw side, and with `BENCH_ISOLATED=1` the raw and
/// Courier sides too, each in a child of its own. The parent says `run ROUND COUNT`;
/// the child runs that round and answers `sample RATE CPU IDLE` (CPU in µs per operation, its
/// own `getrusage`); at `quit` or the end of its input it closes its clients and exits.
final class RawTwin: Sendable {
    /// Which of a scenario's sides a child runs.
    enum Which: String, Sendable {
        case raw, courier
    }

    private let child: Child
    private let name: String

    /// Starts the child and waits until its side is built.
    init(_ scenario: RatioScenario, _ which: Which = .raw, name: String = "raw, in the A/A child", port: Int, concurrency: Int) async throws {
        self.name = name
        child = try Child(executable: Child.courierBench, arguments: ["--goals-side", scenario.rawValue, which.rawValue, String(port), String(concurrency)])
        guard try await reply() == ["ready"] else { throw BenchError("the child of \(scenario.rawValue) (\(name)) did not start") }
    }

    var side: RatioScenario.Side {
        RatioScenario.Side(name: name) { [self] round, count in
            child.send("run \(round) \(count)\n")
            let fields = try await reply()
            guard fields.count == 4, fields[0] == "sample", let rate = Double(fields[1]), let cpu = Double(fields[2]), let idle = Double(fields[3]) else {
                throw BenchError("the child (\(name)) answered \(fields.joined(separator: " "))")
            }
            return Measured(rate: rate, cpu: cpu, idle: idle)
        }
    }

    func finish() async throws {
        child.send("quit\n")
        let status = await child.exit()
        guard status == 0 else { throw BenchError("the child (\(name)) exited with \(status)") }
    }

    /// Ends the child after a failed round.
    func abandon() {
        child.kill()
    }

    /// The child's next protocol line, split into fields; anything else it prints is passed on.
    private func reply() async throws -> [String] {
        while let line = await child.line() {
            let fields = line.split(separator: " ").map(String.init)
            if fields.first == "ready" || fields.first == "sample" { return fields }
            print("    [\(name)] \(line)")
        }
        throw BenchError("the child (\(name)) ended (see its error above)")
    }

    /// In the child: builds side `arguments[1]` (`raw` or `courier`) of scenario
    /// `arguments[0]` and serves the parent's rounds.
    static func serve(arguments: [String]) async throws {
        guard arguments.count == 4, let scenario = RatioScenario(rawValue: arguments[0]), let which = Which(rawValue: arguments[1]),
            let port = Int(arguments[2]), let concurrency = Int(arguments[3])
        else {
            throw BenchError("usage: courier-bench --goals-side SCENARIO raw|courier PORT CONCURRENCY")
        }
        guard !(scenario == .drainPostgres && which == .courier) else {
            throw BenchError("the PostgreSQL drain's Courier side runs in the parent only (its schemas are dropped there)")
        }
        let context = try RatioScenario.Context(port: port, concurrency: concurrency, database: nil)
        defer { try? FileManager.default.removeItem(at: context.folder) }
        let sides = scenario.sides(context)
        // Protocol lines go straight to the pipe: `print` would hold them in its buffer.
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while let line = await Child.readLine(from: FileHandle.standardInput), line != "quit" {
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == "run", let round = Int(fields[1]), let count = Int(fields[2]) else { throw BenchError("the child got \(line)") }
            let sample = try await (which == .raw ? sides.raw : sides.courier).measure(round, count)
            FileHandle.standardOutput.write(Data("sample \(sample.rate) \(sample.cpu) \(sample.idle)\n".utf8))
        }
        try await sides.close()
    }
}
