import Foundation
import HTTPCore

/// A page of a listing whose filter a store matches over a bounded number of rows
/// (``OfflineQueue/entryPage(_:scanLimit:)``): the entries found, and where the next page starts.
public struct EntryPage: Sendable, Hashable {
    /// The entries found, oldest first; fewer than the filter's limit when the scan ended first.
    public var entries: [QueueEntry]
    /// The next page's ``EntryFilter/after``: the last entry returned when the page is full, the
    /// last row examined when the scan limit ended it; `nil` when no row is left to examine.
    public var next: EntryID?

    /// A page of `entries` whose next page starts after `next`; `nil` when there is none.
    public init(entries: [QueueEntry] = [], next: EntryID? = nil) {
        self.entries = entries
        self.next = next
    }
}
