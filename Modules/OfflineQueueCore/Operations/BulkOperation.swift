/// An operator's change of every entry a selection matches (``OfflineQueue/retry(matching:dryRun:)``,
/// ``OfflineQueue/purge(matching:dryRun:)``), with the rules that belong to no store decided
/// here, once: which states a selection means, and which of the entries matched change and
/// which are skipped. A store finds the rows matching and applies the change to the ids
/// ``plan(_:)`` picks, in one transaction (``QueueOperatorStorage/change(_:matching:now:dryRun:)``).
package enum BulkOperation: Sendable, Hashable {
    /// Due now with a fresh attempt budget.
    case retry
    /// Deleted, with their bodies.
    case purge
    /// Blocked entries stop waiting for their parents: their links dropped, pending, due now.
    case release

    /// The states `selection` matches: its own, or this operation's default (pending, dead and
    /// conflict for a retry, every state for a purge). A retry never touches a delivered
    /// entry, nor a blocked one (its parents decide when it goes), nor a superseded one (never
    /// to be sent). Empty: there is nothing to do.
    package func states(of selection: EntrySelection) -> Set<EntryState> {
        switch self {
        case .retry: (selection.states.isEmpty ? [.pending, .dead, .conflict] : selection.states).subtracting([.delivered, .blocked, .superseded])
        case .purge: selection.matchedStates
        case .release: selection.matchedStates.intersection([.blocked])
        }
    }

    /// Whether a retry by id (``QueueOperatorStorage/retry(ids:now:)``) changes an entry in
    /// `state`: the states a retry of a selection takes by default (pending, dead, conflict).
    /// A delivered entry is done, a blocked one waits for its parents, a superseded one is
    /// never sent: each is left as it is. (One in flight is refused.)
    package static func retries(_ state: EntryState) -> Bool {
        BulkOperation.retry.states(of: EntrySelection()).contains(state)
    }

    /// Which matched entries change, oldest first, and which are skipped: a retry leaves every
    /// entry in flight alone, a purge only those whose drainer lives.
    package func plan(_ matches: [BulkMatch]) -> (changed: [BulkMatch], skipped: [EntryID]) {
        var changed: [BulkMatch] = []
        var skipped: [EntryID] = []
        for match in matches {
            let held = switch self {
            case .retry: match.state == .inflight
            case .purge: match.state == .inflight && match.drainerLives
            case .release: false
            }
            if held { skipped.append(match.id) } else { changed.append(match) }
        }
        return (changed, skipped)
    }
}

/// A row a selection matched: what ``BulkOperation/plan(_:)`` decides on, and what a store
/// needs to apply the change.
package struct BulkMatch: Sendable, Hashable {
    package var id: EntryID
    package var state: EntryState
    /// For an entry in flight, whether the drainer that holds it lives (by the store's rule of
    /// ownership); `false` otherwise.
    package var drainerLives: Bool
    /// The store's reference to the body kept apart, deleted with the entry.
    package var bodyReference: String?

    package init(id: EntryID, state: EntryState, drainerLives: Bool, bodyReference: String?) {
        self.id = id
        self.state = state
        self.drainerLives = drainerLives
        self.bodyReference = bodyReference
    }
}

extension EntrySelection {
    /// The states this selection matches where naming none means every one (a count's, a
    /// purge's).
    package var matchedStates: Set<EntryState> {
        states.isEmpty ? Set(EntryState.allCases) : states
    }
}
