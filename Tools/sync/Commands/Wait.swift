import ArgumentParser
import Foundation
import OfflineQueue

struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until an entry is delivered, dies or is removed, and say how it ended.",
        discussion: """
            Woken by the queue when an entry settles, by whichever process drains it (the \
            <db>.settled file beside a SQLite queue; NOTIFY on PostgreSQL), not by a poll. \
            Prints the outcome and, for an entry that kept its response (sync enqueue \
            --keep-response), the response; with --json, one object: id, outcome (delivered, \
            dead, purged, superseded), status, and response or dead_reason and error.

            Exit codes: 0 delivered, 3 dead, 4 removed (purged, or by retention) before it was \
            read, or superseded (replaced under its coalescing key, never sent), 75 still open when --timeout passed, 65 no such entry; the others as for every \
            command.

            Examples:
              id=$(sync enqueue POST https://api.example.com/notes --data '{}' --keep-response)
              sync wait "$id" --timeout 60
              sync --json wait 42
            """
    )

    /// EX_* do not name these: the outcomes a script branches on.
    static let dead = ExitCode(3)
    static let purged = ExitCode(4)

    @OptionGroup var options: QueueOptions

    @Argument(help: "The entry's id.")
    var id: EntryID

    @Option(name: .long, help: ArgumentHelp("Give up after this many seconds (exit 75); wait for ever without it.", valueName: "seconds"))
    var timeout: Double?

    /// How often to look again without word from the queue (tests set it past their guard).
    @Option(name: .long, help: .hidden)
    var recheck: Double = 10

    func validate() throws {
        if id <= 0 { throw ValidationError("\(id) is not an entry id") }
        if let timeout, !(timeout >= 0 && timeout <= 31_536_000) { throw ValidationError("--timeout must be 0 to 31536000 seconds") }
    }

    func run() async throws {
        let outcome = try await reporting {
            try await options.withQueue(create: false, readOnly: true) { queue in
                try await queue.outcome(
                    of: id, timeout: timeout.map { .milliseconds(Int64(($0 * 1000).rounded())) }, recheck: .milliseconds(Int64(max(0.01, recheck) * 1000))
                )
            }
        }
        guard let outcome else {
            if options.json { Output.json(["id": id, "outcome": NSNull()]) } else { complain("entry \(id) is still open after \(timeout ?? 0) s") }
            throw SysExit.tryAgain
        }
        var object: [String: Any] = ["id": id, "outcome": outcome.name]
        switch outcome {
        case .delivered(let status, let response):
            object["status"] = status.map { $0 as Any } ?? NSNull()
            object["response"] = response.map { Output.object($0) as Any } ?? NSNull()
        case .dead(let reason, let error):
            object["dead_reason"] = reason?.rawValue ?? NSNull()
            object["error"] = error ?? NSNull()
        case .purged:
            break
        case .superseded(let error):
            object["error"] = error ?? NSNull()
        }
        if options.json {
            Output.json(object)
        } else {
            switch outcome {
            case .delivered(let status, let response):
                print("delivered\(status.map { " \($0)" } ?? "")")
                if let response { Output.printKeptResponse(Output.object(response)) }
            case .dead(let reason, let error):
                print(Output.terminalSafe("dead\(reason.map { " (\($0.rawValue))" } ?? ""): \(error ?? "")"))
            case .purged:
                print("purged")
            case .superseded(let error):
                print(Output.terminalSafe("superseded: \(error ?? "")"))
            }
        }
        switch outcome {
        case .delivered: return
        case .dead: throw Self.dead
        case .purged, .superseded: throw Self.purged
        }
    }
}
