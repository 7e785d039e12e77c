import ArgumentParser
import Foundation
import OfflineQueue

/// The bulk selection of `sync retry` and `sync purge`: one option group, so both commands
/// spell, check and document it the same way.
struct SelectionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Only entries in this state: pending, blocked, inflight, delivered, dead, superseded, conflict or all (repeatable).", valueName: "state"))
    var state: [StateChoice] = []

    @Option(name: .long, help: ArgumentHelp("Only entries of this group.", valueName: "group"))
    var group: String?

    @Option(name: .long, help: ArgumentHelp("Only entries whose last response had this status, such as 503, or this class, such as 5xx.", valueName: "code"))
    var status: String?

    @Option(name: .long, help: ArgumentHelp(
        "Only entries that finished (or, still open, were enqueued) longer ago than this, such as 90s, 30m, 12h, 7d or 2w.",
        valueName: "duration"
    ))
    var olderThan: String?

    @Option(name: .long, help: ArgumentHelp("Only entries whose URL starts with this text.", valueName: "prefix"))
    var urlPrefix: String?

    @Flag(name: .long, help: "Print what would change, and change nothing.")
    var dryRun = false

    /// Whether any condition was given (`--dry-run` is not one).
    var isSet: Bool { !state.isEmpty || group != nil || status != nil || olderThan != nil || urlPrefix != nil }

    /// The names of the conditions given, for messages.
    var given: [String] {
        [("--state", !state.isEmpty), ("--group", group != nil), ("--status", status != nil),
         ("--older-than", olderThan != nil), ("--url-prefix", urlPrefix != nil)].filter(\.1).map(\.0)
    }

    /// Usage errors for values that do not parse.
    func check() throws {
        if let status, Self.statusRange(status) == nil {
            throw ValidationError("--status \(status.debugDescription) is not a status code (100 to 599, such as 503) or class (such as 5xx)")
        }
        if let olderThan, Self.seconds(olderThan) == nil {
            throw ValidationError("--older-than \(olderThan.debugDescription) is not a duration such as 90s, 30m, 12h, 7d or 2w (at most 100 years)")
        }
    }

    /// The library's selection; `extraStates` are added to `--state` (`--dead`, `--delivered`).
    func selection(adding extraStates: Set<EntryState> = []) -> EntrySelection {
        // `all` names every state, which is what no state means.
        let states = state.contains(.all) ? [] : state.reduce(into: extraStates) { $0.formUnion($1.states) }
        return EntrySelection(
            states: states, group: group, status: status.flatMap(Self.statusRange),
            olderThan: olderThan.flatMap(Self.seconds).map { .milliseconds(Int64(($0 * 1000).rounded())) },
            urlPrefix: urlPrefix
        )
    }

    /// `503` as `503...503`, `5xx` as `500...599`.
    static func statusRange(_ text: String) -> ClosedRange<Int>? {
        if let code = Int(text), (100...599).contains(code) { return code...code }
        let lower = text.lowercased()
        guard lower.count == 3, lower.hasSuffix("xx"), let digit = lower.first?.wholeNumberValue, (1...5).contains(digit) else { return nil }
        return (digit * 100)...(digit * 100 + 99)
    }

    /// The longest `--older-than`: a hundred years.
    static let longest: Double = 100 * 365 * 86_400

    /// `90s`, `30m`, `12h`, `7d`, `2w` (or a bare number of seconds) in seconds, up to
    /// ``longest``; `nil` for anything else, `inf` and `nan` included.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        let value: Double
        if let number = Double(text) {
            value = number
        } else if let unit = text.last, let factor = units[unit], let number = Double(text.dropLast()) {
            value = number * factor
        } else {
            return nil
        }
        return value.isFinite && value >= 0 && value <= longest ? value : nil
    }
}

/// What a bulk change of a selection did, beside the key of the command (`retried`,
/// `purged`): the entries in flight it skipped, whether it was a dry run, and on a dry run the
/// entries it would change (as `sync list` shows them).
struct BulkReport: Encodable {
    var change: BulkChange
    /// What the command does (`retry`, `purge`).
    var verb: String

    init(_ change: BulkChange, verb: String) {
        self.change = change
        self.verb = verb
    }

    enum CodingKeys: String, CodingKey {
        case skipped, entries, dryRun = "dry_run"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(change.skipped, forKey: .skipped)
        try container.encode(change.dryRun, forKey: .dryRun)
        if change.dryRun { try container.encode(change.entries.map { EntrySummary($0) }, forKey: .entries) }
    }

    /// Prints what would change on a dry run, `done` otherwise, and the entries skipped.
    func printText(done: String) {
        if change.dryRun {
            print("would \(verb) \(change.ids.count) entries\(change.ids.isEmpty ? "" : ":")")
            let now = Date()
            for entry in change.entries { print(Output.line(entry, now: now)) }
        } else {
            print(done)
        }
        if !change.skipped.isEmpty {
            let ids = change.skipped.map(String.init).joined(separator: " ")
            print("\(change.skipped.count) entries in flight \(change.dryRun ? "would be" : "were") left alone: \(ids)")
        }
    }
}
