public import OfflineQueueCore

/// An operator's action in the console, and the states it makes sense in (the table in
/// `Docs/Console.md`). The console checks it before it asks the queue, and shows a form only
/// where it applies.
public enum ConsoleAction: String, Sendable, Hashable, CaseIterable, Codable {
    /// Due now with a fresh attempt budget.
    case retry
    /// Deleted with its body.
    case discard
    /// A blocked entry stops waiting for others: due now (`OfflineQueue.release(_:)`).
    case release
    /// Every delivered entry deleted.
    case purgeDelivered = "purge-delivered"
    /// The queue or a group held back from drainers.
    case pause
    /// A pause lifted.
    case resume

    /// The entry states the action applies to; every state for the actions on the queue.
    public var states: Set<EntryState> {
        switch self {
        // A delivered entry was accepted: sending it again would repeat it. One in flight is
        // being sent right now. A conflict retried goes again as it is: the operator's word
        // that it should win.
        case .retry: [.pending, .dead, .conflict]
        // An entry in flight under a live drainer may be on the wire: deleting it would lose
        // what the server answers.
        case .discard: [.pending, .blocked, .delivered, .dead, .conflict, .superseded]
        // Only a blocked entry waits for others.
        case .release: [.blocked]
        case .purgeDelivered: [.delivered]
        case .pause, .resume: Set(EntryState.allCases)
        }
    }

    /// Whether the action applies to an entry in `state`.
    public func applies(to state: EntryState) -> Bool { states.contains(state) }
}
