import Foundation
import OfflineQueueCore

// What the actions answer: a confirmation of an action on every matching entry, and the
// results (moved here from ConsoleViews.swift as they were).

/// The confirmation of a bulk action on every entry a filter matches.
struct ConfirmView: Encodable, Sendable {
    var action: String
    /// "Retry" or "Discard", for the button.
    var verb: String
    var filter: EntriesQuery
    /// How many entries the action would change now, and the newest of them (the confirmed
    /// action goes no further).
    var count: Int
    var through: EntryID?
    var hasMatches: Bool
    /// The states the action applies to, in words.
    var states: String
    /// Where the confirming form posts.
    var confirm: String
    /// The entries list with the same filter, to go back.
    var backQuery: String
    /// The filter in words: `state dead, name orders`, or `every entry`.
    var described: String

    init(action: ConsoleAction, filter: EntriesQuery, found: SelectionCount, confirm: String) {
        self.action = action.rawValue
        verb = action == .retry ? "Retry" : "Discard"
        self.filter = filter
        count = found.count
        through = found.newest
        hasMatches = found.count > 0
        states = action.states.map(\.rawValue).sorted().joined(separator: ", ")
        self.confirm = confirm
        backQuery = filter.filterQuery
        let parts = [("state", filter.state), ("group", filter.group), ("name", filter.name), ("origin", filter.origin)].filter { !$0.1.isEmpty }
        described = parts.isEmpty ? "every entry" : parts.map { "\($0) \($1)" }.joined(separator: ", ")
    }
}

/// What a confirmed bulk action on a filter did.
struct MatchingResultView: Encodable, Sendable {
    var action: String
    var changed: Int
    var skipped: Int
    var message: String
}

/// What an action did, for a JSON client (a browser is redirected instead).
struct ActionResultView: Encodable, Sendable {
    var action: String
    var changed: [EntryID]
    var skipped: [EntryID]
    var message: String
}
