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
        try await Runner.run(options, .reading) { queue in
            let outcome = try await queue.outcome(
                of: id, timeout: timeout.map { .milliseconds(Int64(($0 * 1000).rounded())) }, recheck: .milliseconds(Int64(max(0.01, recheck) * 1000))
            )
            return WaitReport(id: id, outcome: outcome, timeout: timeout)
        }
    }
}

/// What `sync wait` prints: the entry's id and how it ended (`outcome` null while it is open),
/// with the status and response of a delivery, or why it died; its exit status says it too.
struct WaitReport: Report {
    var id: EntryID
    /// `nil` when the entry was still open at the timeout.
    var outcome: EntryOutcome?
    var timeout: Double?

    enum CodingKeys: String, CodingKey {
        case id, outcome, status, response, error, deadReason = "dead_reason"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(outcome?.name, forKey: .outcome)
        switch outcome {
        case .delivered(let status, let response):
            try container.encode(status, forKey: .status)
            try container.encode(response.map(KeptResponseReport.kept), forKey: .response)
        case .dead(let reason, let error):
            try container.encode(reason?.rawValue, forKey: .deadReason)
            try container.encode(error, forKey: .error)
        case .superseded(let error):
            try container.encode(error, forKey: .error)
        case .purged, nil:
            break
        }
    }

    func printText() {
        switch outcome {
        case nil:
            complain("entry \(id) is still open after \(timeout ?? 0) s")
        case .delivered(let status, let response):
            print("delivered\(status.map { " \($0)" } ?? "")")
            response.map(KeptResponseReport.kept)?.printText()
        case .dead(let reason, let error):
            print(Output.terminalSafe("dead\(reason.map { " (\($0.rawValue))" } ?? ""): \(error ?? "")"))
        case .purged:
            print("purged")
        case .superseded(let error):
            print(Output.terminalSafe("superseded: \(error ?? "")"))
        }
    }

    func finish() throws {
        switch outcome {
        case nil: throw SysExit.tryAgain
        case .delivered: return
        case .dead: throw Wait.dead
        case .purged, .superseded: throw Wait.purged
        }
    }
}
