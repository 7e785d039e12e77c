/// The values one metric label may take: the first `limit` distinct values as they are, every
/// later one as ``other``. A backend keeps a series per label value for as long as it runs, so
/// a label fed a value per entry (a path with an id in it) would grow without end; past the
/// limit, the unknown values share one series.
///
/// Only the admitted values are kept (at most `limit`), never the refused ones, so a process
/// that sees a new value per entry for months holds no more than it did at the limit.
package final class BoundedLabel: Sendable {
    /// The value reported for every value past the limit.
    package static let other = "other"

    package let limit: Int
    private let state = LockedBox(State())

    private struct State {
        var admitted: Set<String> = []
        var refusedOne = false
    }

    package init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// `value` when it is admitted (seen before, or there is room for it), ``other`` when not;
    /// `firstRefusal` is true for the first value ever refused, so that its caller says so once.
    package func admit(_ value: String) -> (value: String, firstRefusal: Bool) {
        state.withLock { state in
            if state.admitted.contains(value) { return (value, false) }
            if state.admitted.count < limit {
                state.admitted.insert(value)
                return (value, false)
            }
            defer { state.refusedOne = true }
            return (Self.other, !state.refusedOne)
        }
    }
}
