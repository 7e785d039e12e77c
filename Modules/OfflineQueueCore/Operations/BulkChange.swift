import Foundation

/// What a bulk retry or purge changed, or, in a dry run, would change. All of it happened in
/// one transaction: a concurrent drainer saw either none of it or all of it.
public struct BulkChange: Sendable, Hashable {
    /// The entries changed (or that would be), oldest first.
    public var ids: [EntryID]
    /// Entries the selection matched but the operation left alone: those in flight (a retry
    /// never touches them; a purge only when their drainer is gone).
    public var skipped: [EntryID]
    /// Whether nothing was changed: the answer of a dry run.
    public var dryRun: Bool
    /// In a dry run, the entries that would change, as they are now; empty otherwise.
    public var entries: [QueueEntry]

    /// A change of the entries given; by default none changed, none skipped, and not a dry run.
    public init(ids: [EntryID] = [], skipped: [EntryID] = [], dryRun: Bool = false, entries: [QueueEntry] = []) {
        self.ids = ids
        self.skipped = skipped
        self.dryRun = dryRun
        self.entries = entries
    }
}
