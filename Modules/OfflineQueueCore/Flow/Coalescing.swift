import Foundation

/// The rule for edits that coalesce (``EnqueueOptions/coalescingKey``), decided here once for
/// every store: what an enqueue under a key does with the entries still open under it. A store
/// reads them in the insert's transaction (locked against a concurrent claim or enqueue) and
/// applies the decision there.
package enum CoalescingRule {
    /// An open entry under the key, as the store reads it.
    package struct Holder: Sendable, Hashable {
        package var id: EntryID
        /// Claimed by a drainer and being sent.
        package var inFlight: Bool

        package init(id: EntryID, inFlight: Bool) {
            self.id = id
            self.inFlight = inFlight
        }
    }

    /// What the enqueue does.
    package enum Decision: Sendable, Hashable {
        /// Nothing waits under the key: a new entry.
        case insert
        /// This entry waits under the key, unsent: it takes the new request in place (its id,
        /// its place in its group's order, its children), and its old request is kept as a
        /// superseded entry of its own.
        case replace(EntryID)
        /// Only this entry is open under the key, in flight: a new entry that waits behind it
        /// and goes once it is settled, delivered or not.
        case after(EntryID)
    }

    /// What an enqueue under a key came to, as a store's insert applies it.
    package enum Applied: Sendable {
        /// Deduplicated by its idempotency key, or taken in place by the entry waiting.
        case done(Ticket)
        /// A new entry, waiting behind `predecessor` when one is in flight under the key.
        case insert(behind: EntryID?)
    }

    /// The decision for the open entries `holders` under a key.
    package static func decide(_ holders: [Holder]) -> Decision {
        // The newest one not in flight; there is at most one, since each enqueue replaces it.
        if let waiting = holders.filter({ !$0.inFlight }).max(by: { $0.id < $1.id }) { return .replace(waiting.id) }
        if let sending = holders.max(by: { $0.id < $1.id }) { return .after(sending.id) }
        return .insert
    }

    /// The last error of a superseded entry: what replaced it.
    package static func supersededReason(by id: EntryID, key: String) -> String {
        "superseded before it was sent by a newer request under coalescing key \(key.debugDescription), now entry \(id); never sent"
    }

    /// The longest key.
    public static let maxKeyLength = 256

    /// `key` checked: not empty, at most ``maxKeyLength`` bytes, no control character.
    package static func checked(_ key: String) throws(QueueError) -> String {
        guard !key.isEmpty, key.utf8.count <= maxKeyLength, !key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidRequest("a coalescing key is 1 to \(maxKeyLength) bytes with no control character, not \(key.debugDescription)")
        }
        return key
    }
}
