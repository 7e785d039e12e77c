import Foundation

/// What an operator does to many entries at once: bulk retries and purges of a selection, and
/// pauses. `sync retry`, `sync purge`, `sync pause` and `sync resume` are built on these.
extension OfflineQueue {
    /// Makes the entries `selection` matches due now with a fresh attempt budget, in one
    /// transaction.
    ///
    /// A selection without states means pending and dead entries. Delivered entries are never
    /// retried; entries in flight are left alone and reported in ``BulkChange/skipped``.
    ///
    /// ```swift
    /// let change = try await queue.retry(matching: EntrySelection(states: [.dead], status: 500...599))
    /// print("\(change.ids.count) entries due now")
    /// ```
    ///
    /// - Parameters:
    ///   - selection: the entries to make due.
    ///   - dryRun: change nothing; the answer lists what would change (and, in
    ///     ``BulkChange/entries``, those entries as they are).
    @discardableResult
    public func retry(matching selection: EntrySelection, dryRun: Bool = false) async throws(QueueError) -> BulkChange {
        try await operations.retry(matching: selection, dryRun: dryRun)
    }

    /// Deletes the entries `selection` matches, and their bodies, in one transaction.
    ///
    /// A selection without states means entries in any state. An entry in flight under a
    /// drainer that lives is never deleted: it is reported in ``BulkChange/skipped``.
    ///
    /// ```swift
    /// // Everything still waiting for an endpoint that was retired.
    /// try await queue.purge(matching: EntrySelection(urlPrefix: "https://old.example.com/"))
    /// ```
    ///
    /// - Parameters:
    ///   - selection: the entries to delete.
    ///   - dryRun: change nothing; the answer lists what would change.
    @discardableResult
    public func purge(matching selection: EntrySelection, dryRun: Bool = false) async throws(QueueError) -> BulkChange {
        try await operations.purge(matching: selection, dryRun: dryRun)
    }

    /// The blocked entries nothing will release, in id order: each waits, directly or through
    /// others, for an entry that waits for itself. An enqueue that would close such a loop is
    /// refused (``QueueError/Kind/dependencyCycle``), so only a queue written by an earlier
    /// version holds them; ``QueueCounts/stuck`` counts them.
    ///
    /// ```swift
    /// let stuck = try await queue.stuckEntries()
    /// try await queue.release(stuck)          // each is due now, waiting for nothing
    /// ```
    public func stuckEntries() async throws(QueueError) -> [EntryID] {
        try await operations.stuck().sorted()
    }

    /// Makes the blocked entries among `ids` stop waiting for others (``EnqueueOptions/after``):
    /// their links are dropped and each is due now, in one transaction. For entries nothing
    /// else will release (``stuckEntries()``), or one an operator wants sent without its
    /// parents. An entry that takes values from a parent's kept response
    /// (``ResponseReference``) dies unsent at its attempt when that parent kept none, or
    /// retention has removed it (a released entry no longer keeps its parents from retention).
    ///
    /// - Returns: the ids released; entries not blocked are left as they are.
    /// - Throws: ``QueueError/noSuchEntry(_:)`` for an id the queue does not hold; then nothing
    ///   changed.
    @discardableResult
    public func release(_ ids: [EntryID]) async throws(QueueError) -> [EntryID] {
        try await operations.release(ids)
    }

    /// Pauses `group`, or the whole queue when `group` is `nil`: from the next claim on, no
    /// drainer in any process that shares the store sends the entries it holds, until
    /// ``resume(group:)``. Entries in flight finish; enqueueing goes on. The pause is kept in the
    /// store, so it outlives the process.
    ///
    /// - Returns: whether it was not paused before.
    @discardableResult
    public func pause(group: String? = nil) async throws(QueueError) -> Bool {
        try await operations.pause(group: group)
    }

    /// Lifts the pause of `group`, or the whole queue's pause when `group` is `nil` (pauses of
    /// single groups stay). A running service drains at once: one of this process, and one of
    /// another process where the store wakes it (SQLite's wake file, PostgreSQL's `NOTIFY`);
    /// otherwise at its next poll.
    ///
    /// - Returns: whether there was such a pause.
    @discardableResult
    public func resume(group: String? = nil) async throws(QueueError) -> Bool {
        try await operations.resume(group: group)
    }

    /// The pauses in force and how many pending entries they hold back.
    public func pauses() async throws(QueueError) -> PauseStatus { try await operations.pauses() }

    /// The origins whose flow is held (``FlowControl``): their circuit when open and their
    /// failures in a row (``OriginHealth``), paused by a `Retry-After` until when and by which
    /// status, their concurrency shrunk by overloads, their stored limit, and their entries in
    /// flight. Empty for a queue that holds none.
    public func originFlows() async throws(QueueError) -> [FlowControl.OriginStatus] { try await operations.originFlows() }

    /// Lifts `origin`'s `Retry-After` pause and its shrunk concurrency, and closes its circuit
    /// (its pending entries are then due at once; a stored limit stays), and wakes the drainers,
    /// as ``resume(group:)`` does.
    ///
    /// - Returns: whether any was in force.
    @discardableResult
    public func resume(origin: String) async throws(QueueError) -> Bool {
        var text = origin
        while text.hasSuffix("/") { text.removeLast() }
        let lifted = try await operations.resume(origin: text)
        if lifted { circuits.closed([text]) }
        return lifted
    }
}
