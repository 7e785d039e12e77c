import ArgumentParser
import Foundation
import OfflineQueue

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop every drainer from sending the queue's entries, or one group's, until resumed.",
        discussion: """
            The pause is kept in the database: no drainer of any process (sync run, sync drain, \
            an app's queue) claims what it holds from its next claim on, across restarts, until \
            `sync resume`. Entries in flight finish; enqueueing goes on. `sync stats` and \
            `sync list` show it.

            Examples:
              sync pause
              sync pause --group user-42
            """
    )

    @OptionGroup var target: PauseTarget

    func run() async throws {
        try await target.apply(paused: true) { queue, group throws(QueueError) in try await queue.pause(group: group) }
    }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lift a pause made by `sync pause` (of the whole queue, or of one group), or an origin's pause after a 429 or 503.",
        discussion: """
            Without --group it lifts the whole queue's pause; pauses of single groups stay. A \
            running `sync run` picks the entries up at once.

            With --origin it lifts the pause a server's Retry-After put on an origin, and the \
            concurrency its 429s and 503s shrank; a limit set with --origin-limit stays. \
            `sync stats` lists the origins held.

            Examples:
              sync resume
              sync resume --group user-42
              sync resume --origin https://api.example.com
            """
    )

    @OptionGroup var target: PauseTarget

    @Option(name: .long, help: ArgumentHelp("Lift this origin's Retry-After pause and shrunk concurrency instead (https://host[:port]).", valueName: "origin"))
    var origin: String?

    func validate() throws {
        if origin != nil && target.group != nil { throw ValidationError("--origin and --group name different pauses: give one") }
    }

    func run() async throws {
        guard let origin else {
            try await target.apply(paused: false) { queue, group throws(QueueError) in try await queue.resume(group: group) }
            return
        }
        try await Runner.run(target.options, .changing) { queue in
            OriginResumeReport(origin: origin, changed: try await queue.resume(origin: origin))
        }
    }
}

/// What `sync resume --origin` prints: the origin, and whether it was paused or slowed.
struct OriginResumeReport: Report {
    var origin: String
    var paused = false
    var changed: Bool

    init(origin: String, changed: Bool) {
        self.origin = origin
        self.changed = changed
    }

    func printText() {
        print(Output.terminalSafe(changed ? "origin \(origin) resumed" : "origin \(origin) was not paused or slowed"))
    }
}

/// What `pause` and `resume` act on, and what they print.
struct PauseTarget: ParsableArguments {
    @OptionGroup var options: QueueOptions

    @Option(name: .long, help: "Only this group, not the whole queue.")
    var group: String?

    /// Opens the queue, applies `change` (which says whether anything changed), and reports.
    func apply(paused: Bool, _ change: (OfflineQueue, String?) async throws(QueueError) -> Bool) async throws {
        try await Runner.run(options, .changing) { queue in
            PauseReport(group: group, paused: paused, changed: try await change(queue, group))
        }
    }
}

/// What `sync pause` and `sync resume` print: the group (`null` for the whole queue), whether
/// it is paused now, and whether that changed anything.
struct PauseReport: Report {
    @OrNull var group: String?
    var paused: Bool
    var changed: Bool

    func printText() {
        let what = group.map { "group \($0)" } ?? "the queue"
        print(Output.terminalSafe(changed ? "\(what) \(paused ? "paused" : "resumed")" : "\(what) was already \(paused ? "paused" : "not paused")"))
    }
}
