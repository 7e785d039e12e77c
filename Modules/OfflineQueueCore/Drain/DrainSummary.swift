public import Foundation

/// What one drain did.
public struct DrainSummary: Sendable, Hashable, Codable {
    /// Entries the server accepted.
    public var delivered = 0
    /// Attempts that failed and were scheduled again.
    public var failed = 0
    /// Entries that went to dead letters.
    public var dead = 0
    /// Entries whose answer was a conflict left for an operator (``EntryState/conflict``).
    public var conflicts = 0
    /// Entries a conflict resolver dropped (``EntryState/superseded``).
    public var dropped = 0
    /// Attempts that found the network gone (not counted against budgets).
    public var waitingForNetwork = 0
    /// Attempts interrupted by a stop and given back.
    public var released = 0
    /// Attempts whose lease lapsed before they ended.
    public var leasesLost = 0
    /// Entries taken back from drainers that had died holding them.
    public var reclaimed = 0
    /// Entries still pending when the drain ended (in the store, from every process).
    public var remaining = 0
    /// Of ``remaining``, those a pause holds back (``OfflineQueue/pause(group:)``).
    public var paused = 0
    /// Entries still waiting for others to be delivered when the drain ended
    /// (``EntryState/blocked``; not among ``remaining``).
    public var blocked = 0
    /// Of ``blocked``, those nothing will release (``QueueCounts/stuck``): a loop of entries
    /// waiting for each other, which an operator must release or purge.
    public var stuck = 0
    /// Entries in flight under other drainers that live, when the drain ended.
    public var inflightElsewhere = 0
    /// Those drainers (``QueueCounts/drainers``).
    public var otherDrainers: [String] = []
    /// When the next of them is due, as a wall time when the drain ended (for showing).
    public var nextAttemptAt: Date?
    /// The same, on the boot clock: what a caller waits for.
    public var nextDue: DueTime?
    /// Whether the drain stopped, or did not start, because the network is gone.
    public var offline = false
    /// When the drain's last claim passed over due entries whose origin is paused or at its
    /// limit (``FlowControl``): how long until the soonest of those origins frees by time.
    public var heldFor: Duration?

    /// A summary with every count zero, no time set, and the network there.
    public init() {}

    /// Counts one recorded transition.
    mutating func count(_ transition: EntryLifecycle.Transition) {
        switch transition {
        case .deliver: delivered += 1
        case .retry(let retry):
            if retry.waitingForNetwork { waitingForNetwork += 1 } else { failed += 1 }
        case .deadLetter: dead += 1
        case .release: released += 1
        case .conflict: conflicts += 1
        case .drop: dropped += 1
        }
    }
}
