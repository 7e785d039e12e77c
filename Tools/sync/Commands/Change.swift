import ArgumentParser
import Foundation
import OfflineQueue

struct Retry: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make dead, waiting or conflicting entries due now, with a fresh attempt budget.",
        discussion: """
            Give entry ids, --dead, or a selection: --state (pending, dead or conflict; all three \
            by default; a conflict goes again as it is), \
            --group, --status, --older-than and --url-prefix, all of which must hold. A selection \
            is changed in one transaction; entries in flight are left alone, delivered ones are \
            never retried. --dry-run prints what would change.

            Examples:
              sync retry 41 42
              sync retry --dead
              sync retry --group user-42 --status 5xx --dry-run
              sync retry --state dead --url-prefix https://api.example.com/v2/ --older-than 1h
            """
    )

    @OptionGroup var options: QueueOptions

    @Argument(help: "Entry ids.")
    var ids: [EntryID] = []

    @Flag(name: .long, help: "Every dead entry (with a selection: the dead ones it matches).")
    var dead = false

    @OptionGroup(title: "Selection") var selection: SelectionOptions

    func validate() throws {
        let selecting = dead || selection.isSet
        if selecting == !ids.isEmpty {
            throw ValidationError(ids.isEmpty
                ? "give entry ids, --dead, or a selection (--state, --group, --status, --older-than, --url-prefix)"
                : "give entry ids or a selection, not both (\((dead ? ["--dead"] : []) + selection.given))")
        }
        if selection.dryRun && !ids.isEmpty { throw ValidationError("--dry-run applies to a selection, not to entry ids") }
        for state in selection.state where [.inflight, .delivered, .blocked, .superseded].contains(state) {
            throw ValidationError("--state \(state.rawValue): retry takes pending, dead or conflict entries (in flight ones are being sent, delivered ones are done, blocked ones wait for others, superseded ones are never sent)")
        }
        try selection.check()
    }

    func run() async throws {
        try await Runner.run(options, QueueAccess(readOnly: selection.dryRun)) { queue in
            guard ids.isEmpty else { return RetryReport(retried: try await queue.retry(ids)) }
            let change = try await queue.retry(matching: selection.selection(adding: dead ? [.dead] : []), dryRun: selection.dryRun)
            return RetryReport(retried: change.ids, bulk: BulkReport(change, verb: "retry"))
        }
    }
}

/// What `sync retry` prints: the ids made due, with what a selection skipped (``BulkReport``).
struct RetryReport: Report {
    var retried: [EntryID]
    var bulk: BulkReport?

    enum CodingKeys: String, CodingKey {
        case retried
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(retried, forKey: .retried)
        try bulk?.encode(to: encoder)
    }

    func printText() {
        guard let bulk else { return print("\(retried.count) entries due now") }
        bulk.printText(done: "\(retried.count) entries due now")
    }
}

struct Purge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete entries: delivered, dead, a selection, or by id.",
        discussion: """
            Give entry ids, --delivered, --dead, or a selection: --state (any state by default), \
            --group, --status, --older-than and --url-prefix, all of which must hold. A selection \
            is deleted in one transaction, with the body files of its entries. Entries in flight \
            under a live drainer are never deleted. --dry-run prints what would go.

            Examples:
              sync purge --delivered
              sync purge --dead --older-than 7d
              sync purge --group retired-tenant --dry-run
              sync purge --url-prefix https://old.example.com/
              sync purge 17 18
            """
    )

    @OptionGroup var options: QueueOptions

    @Argument(help: "Entry ids.")
    var ids: [EntryID] = []

    @Flag(name: .long, help: "Delivered entries.")
    var delivered = false

    @Flag(name: .long, help: "Dead entries.")
    var dead = false

    @OptionGroup(title: "Selection") var selection: SelectionOptions

    func validate() throws {
        let selecting = delivered || dead || selection.isSet
        if selecting == !ids.isEmpty {
            let flags = (delivered ? ["--delivered"] : []) + (dead ? ["--dead"] : []) + selection.given
            throw ValidationError(ids.isEmpty
                ? "give --delivered, --dead, a selection (--state, --group, --status, --older-than, --url-prefix), or entry ids"
                : "give entry ids or a selection, not both (\(flags))")
        }
        if selection.dryRun && !ids.isEmpty { throw ValidationError("--dry-run applies to a selection, not to entry ids") }
        try selection.check()
    }

    func run() async throws {
        try await Runner.run(options, QueueAccess(readOnly: selection.dryRun)) { queue in
            guard ids.isEmpty else { return PurgeReport(purged: try await queue.purge(.ids(ids))) }
            var states: Set<EntryState> = []
            if delivered { states.insert(.delivered) }
            if dead { states.insert(.dead) }
            let change = try await queue.purge(matching: selection.selection(adding: states), dryRun: selection.dryRun)
            return PurgeReport(purged: change.ids.count, ids: change.ids, bulk: BulkReport(change, verb: "purge"))
        }
    }
}

/// What `sync purge` prints: how many entries went and, for a selection, which, with what it
/// skipped (``BulkReport``).
struct PurgeReport: Report {
    var purged: Int
    var ids: [EntryID]?
    var bulk: BulkReport?

    enum CodingKeys: String, CodingKey {
        case purged, ids
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(purged, forKey: .purged)
        try container.encodeIfPresent(ids, forKey: .ids)
        try bulk?.encode(to: encoder)
    }

    func printText() {
        guard let bulk else { return print("\(purged) entries purged") }
        bulk.printText(done: "\(purged) entries purged")
    }
}

struct Release: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make blocked entries stop waiting for others: each is due now.",
        discussion: """
            Give entry ids, or --stuck: every blocked entry nothing will release (entries that \
            wait for each other in a loop, which a queue written by a version before 2026-12 \
            may hold; `sync stats` counts them, `sync drain` exits 65 while they remain). A \
            released entry forgets the entries it waited for and is due now; one that takes \
            values from a parent's kept response dies unsent if that parent kept none. Entries \
            that are not blocked are left as they are. To drop them instead: sync purge ID.

            Examples:
              sync release --stuck
              sync release 12 13
            """
    )

    @OptionGroup var options: QueueOptions

    @Argument(help: "Entry ids.")
    var ids: [EntryID] = []

    @Flag(name: .long, help: "Every blocked entry nothing will release (a loop).")
    var stuck = false

    func validate() throws {
        if stuck == !ids.isEmpty { throw ValidationError(ids.isEmpty ? "give entry ids or --stuck" : "give entry ids or --stuck, not both") }
    }

    func run() async throws {
        try await Runner.run(options, .changing) { queue in
            let chosen = stuck ? try await queue.stuckEntries() : ids
            return ReleaseReport(released: chosen.isEmpty ? [] : try await queue.release(chosen), chosen: chosen)
        }
    }
}

/// What `sync release` prints: the entries released; in text also those left as they were.
struct ReleaseReport: Report {
    var released: [EntryID]
    /// The entries asked for.
    var chosen: [EntryID]

    enum CodingKeys: String, CodingKey {
        case released
    }

    func printText() {
        print("\(released.count) entries released, due now" + (released.isEmpty ? "" : ": " + released.map(String.init).joined(separator: ", ")))
        let left = Set(chosen).subtracting(released).sorted()
        if !left.isEmpty { print("not blocked, left as they are: " + left.map(String.init).joined(separator: ", ")) }
    }
}
