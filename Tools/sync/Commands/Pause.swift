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

    @OptionGroup var options: QueueOptions

    @Option(name: .long, help: "Pause only this group.")
    var group: String?

    func run() async throws {
        try await reporting {
            let queue = try options.openQueue(create: false)
            let changed = try await queue.pause(group: group)
            PauseReport.print(group: group, paused: true, changed: changed, json: options.json)
        }
    }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lift a pause made by `sync pause`: of the whole queue, or of one group.",
        discussion: """
            Without --group it lifts the whole queue's pause; pauses of single groups stay. A \
            running `sync run` picks the entries up at its next poll.

            Examples:
              sync resume
              sync resume --group user-42
            """
    )

    @OptionGroup var options: QueueOptions

    @Option(name: .long, help: "Resume only this group.")
    var group: String?

    func run() async throws {
        try await reporting {
            let queue = try options.openQueue(create: false)
            let changed = try await queue.resume(group: group)
            PauseReport.print(group: group, paused: false, changed: changed, json: options.json)
        }
    }
}

/// What `pause` and `resume` print.
enum PauseReport {
    static func print(group: String?, paused: Bool, changed: Bool, json: Bool) {
        if json {
            Output.json(["group": group.map { $0 as Any } ?? NSNull(), "paused": paused, "changed": changed])
            return
        }
        let what = group.map { "group \($0)" } ?? "the queue"
        let state = paused ? "paused" : "resumed"
        Swift.print(Output.terminalSafe(changed ? "\(what) \(state)" : "\(what) was already \(paused ? "paused" : "not paused")"))
    }
}
