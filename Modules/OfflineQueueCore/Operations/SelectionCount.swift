import Foundation

/// How many entries a selection matches, and the newest of them: a change made later in
/// batches goes ``EntrySelection/through`` it, so it touches no entry enqueued since.
public struct SelectionCount: Sendable, Hashable {
    /// How many entries the selection matches.
    public var count: Int
    /// The largest id matched; `nil` when nothing is.
    public var newest: EntryID?

    /// A count of `count` entries, the newest of them `newest`; none by default.
    public init(count: Int = 0, newest: EntryID? = nil) {
        self.count = count
        self.newest = newest
    }
}
