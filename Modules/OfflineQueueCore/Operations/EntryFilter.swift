import Foundation
import HTTPCore

/// Which entries a listing shows.
///
/// ```swift
/// // The dead entries of one endpoint sent to one origin, 100 at a time.
/// var filter = EntryFilter(states: [.dead], name: "POST /orders", origin: "https://api.example.com")
/// let page = try await queue.entryPage(filter, scanLimit: 5_000)
/// filter.after = page.next                     // nil: there is no next page
/// ```
public struct EntryFilter: Sendable, Hashable {
    /// Only these states; empty for all.
    public var states: Set<EntryState>
    /// Only this group.
    public var group: String?
    /// Only entries of this name (``QueueEntry/name``), compared as is.
    public var name: String?
    /// Only entries whose URL is on this origin: `scheme://host[:port]` as the URL is stored
    /// (see ``matches(origin:url:)``).
    public var origin: String?
    /// At most this many, oldest first.
    public var limit: Int
    /// Only entries with an id above this one, for paging.
    public var after: EntryID?

    /// A filter of the conditions given; by default every entry, 100 at a time from the first.
    public init(
        states: Set<EntryState> = [], group: String? = nil, name: String? = nil, origin: String? = nil, limit: Int = 100,
        after: EntryID? = nil
    ) {
        self.states = states
        self.group = group
        self.name = name
        self.origin = origin
        self.limit = limit
        self.after = after
    }

    /// Whether a stored `url` is on `origin`: the URL is the origin itself, or the origin
    /// followed by a path (`/`) or a query (`?`). So `https://a.example` matches
    /// `https://a.example/x` but not `https://a.example.org/x` nor `https://a.example:8443/x`.
    /// Every store applies this rule (in SQL where the store is a database).
    public static func matches(origin: String, url: String) -> Bool {
        url == origin || url.utf8.starts(with: (origin + "/").utf8) || url.utf8.starts(with: (origin + "?").utf8)
    }
}
