// `queue-model-check`: random programs over the storage contract, run on each store asked beside
// the queue's reference model (Tests/QueueModel), step by step. `Tools/model-check` builds it in
// release and runs it (Docs/ModelCheck.md); its options are that script's.
import Foundation
import Logging
import QueueModel
import QueueTestSupport

/// A line on standard output at once (not buffered: a long run into a file shows how far it got).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// The stores' own logs (each schema's migrations, say) at warning and above, on standard error.
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

let usage = """
    usage: queue-model-check [--steps N] [--store sqlite|postgres|memory|all] [--seed S] [--drainers K] [--length L] [--jobs J]
      --steps N      steps per store (default 10000)
      --store S      the stores, comma-separated, or all (default)
      --seed S       the first program's seed (default 1); a divergence prints the seed that replays it
      --drainers K   drainers per program, 1 to 4 (default 3)
      --length L     steps a program has at most (default 60)
      --jobs J       programs at once, each on a store of its own (default 2)
      --engine       programs through OfflineQueue itself, its drainers draining at once (invariants, not step by step)
    """

var options = ModelCheck.Options(steps: 10_000, jobs: 2)
var engine = false
var arguments = CommandLine.arguments.dropFirst()
@MainActor func value(_ name: String) -> String {
    guard let value = arguments.popFirst() else {
        FileHandle.standardError.write(Data("queue-model-check: \(name) needs a value\n\(usage)\n".utf8))
        exit(64)
    }
    return value
}
@MainActor func number<T: LosslessStringConvertible>(_ name: String) -> T {
    let text = value(name)
    guard let number = T(text) else {
        FileHandle.standardError.write(Data("queue-model-check: \(name) takes a number, not \(text)\n".utf8))
        exit(64)
    }
    return number
}
while let argument = arguments.popFirst() {
    switch argument {
    case "--steps": options.steps = number(argument)
    case "--seed": options.seed = number(argument)
    case "--drainers": options.drainers = max(1, min(4, number(argument)))
    case "--length": options.length = max(1, number(argument))
    case "--jobs": options.jobs = max(1, number(argument))
    case "--engine": engine = true
    case "--store":
        let text = value(argument)
        if text == "all" {
            options.kinds = StoreKind.allCases
        } else {
            options.kinds = text.split(separator: ",").map { name in
                guard let kind = StoreKind(rawValue: String(name)) else {
                    FileHandle.standardError.write(Data("queue-model-check: no store \(name) (sqlite, postgres, memory or all)\n".utf8))
                    exit(64)
                }
                return kind
            }
        }
    case "--help", "-h":
        say(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("queue-model-check: unknown argument \(argument)\n\(usage)\n".utf8))
        exit(64)
    }
}

if ProcessInfo.processInfo.environment["COURIER_MODEL_DUMP"] != nil {
    say(ModelCheck.dump(seed: options.seed, length: options.length, drainers: options.drainers))
    exit(0)
}
var diverged = false
for kind in options.kinds {
    if kind == .postgres && TestStore.postgresURL == nil {
        FileHandle.standardError.write(Data("queue-model-check: \(TestStoreError.noCluster)\n".utf8))
        exit(69)
    }
    if engine {
        say("\(kind.rawValue), through OfflineQueue: \(options.steps) steps, programs of \(options.length) steps, \(options.drainers) drainers, seed \(options.seed)")
        let report = await EngineCheck.run(kind, steps: options.steps, seed: options.seed, length: options.length, drainers: options.drainers)
        say("\(kind.rawValue): \(report)")
        if !report.found.isEmpty { diverged = true }
        continue
    }
    say("\(kind.rawValue): \(options.steps) steps, programs of \(options.length) steps, \(options.drainers) drainers, seed \(options.seed), \(options.jobs) at once")
    let report = await ModelCheck.run(kind, options)
    say("\(kind.rawValue): \(report)")
    if !report.found.isEmpty || !report.unexplained.isEmpty { diverged = true }
}
exit(diverged ? 1 : 0)
