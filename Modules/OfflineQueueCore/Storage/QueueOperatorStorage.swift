/// The operator's role of the storage contract (``QueueStorage``): what people, `sync` and
/// dashboards do to a queue: look (entries, counts, pauses) and act (retry, purge, pause,
/// resume). Every change is one transaction, and an entry in flight under a drainer that
/// lives is never changed under it.
///
/// ```swift
/// let dead = try await store.entries(EntryFilter(states: [.dead]), now: clock.now())
/// let change = try await store.change(.retry, matching: EntrySelection(states: [.dead], status: 500...599),
///                                     now: clock.now(), dryRun: false)
/// _ = try await store.pause(group: "user-42", now: clock.now())
/// ```
package protocol QueueOperatorStorage: Sendable {
    // MARK: Reading

    /// The entry with `id`; its due time on the boot clock of `now` (``QueueEntry/nextDue``).
    func entry(_ id: EntryID, now: QueueTime) async throws(QueueError) -> QueueEntry?
    /// The entry with this idempotency key.
    func entry(idempotencyKey key: String, now: QueueTime) async throws(QueueError) -> QueueEntry?
    /// Entries matching `filter`, oldest first.
    func entries(_ filter: EntryFilter, now: QueueTime) async throws(QueueError) -> [QueueEntry]
    /// Entries matching `filter` among the first `scanLimit` rows (at least the filter's limit)
    /// of its states past ``EntryFilter/after``, oldest first, and where the next page starts:
    /// after the last entry of a full page, after the last row examined when the scan ended
    /// first, `nil` when no row of its states is left.
    func entryPage(_ filter: EntryFilter, scanLimit: Int, now: QueueTime) async throws(QueueError) -> EntryPage
    /// How many entries `selection` matches, every state when it names none (its limit ignored).
    func count(matching selection: EntrySelection, now: QueueTime) async throws(QueueError) -> SelectionCount
    /// The entries by group, name and state among the `newest` entries (a walk of the id order
    /// from the end, bounded however many there are), the entries waiting for the network,
    /// and the deliveries of the last one and five minutes.
    func tally(newest: Int, now: QueueTime) async throws(QueueError) -> EntryTally
    /// How many entries are in each state, the oldest pending, the next due time, and the
    /// drainers holding entries (those that are gone counted apart).
    func counts(now: QueueTime) async throws(QueueError) -> QueueCounts
    /// The pauses in force and the pending entries they hold.
    func pauseStatus() async throws(QueueError) -> PauseStatus
    /// The origins whose flow is held (``FlowControl``): paused, shrunk or limited, with their
    /// entries in flight.
    func originFlows(now: QueueTime) async throws(QueueError) -> [OriginFlowStatus]
    /// The entries `id` waits for and the entries that wait for it (none for an entry the
    /// queue does not hold).
    func dependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies
    /// The links whose child and parent are both blocked, which ``DependencyRule/stuck(_:)``
    /// reads (none for most queues, which hold no blocked entry).
    func blockedLinks() async throws(QueueError) -> [DependencyRule.Link]

    // MARK: Changing

    /// Makes these entries due now with a fresh attempt budget (`nil`: every dead entry).
    /// Delivered, blocked and superseded entries are left alone (``BulkOperation/retries(_:)``).
    /// Returns the ids given (`nil`: the dead entries changed).
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)`` or ``QueueError/entryInFlight(_:)``; then
    ///   nothing changed.
    func retry(ids: [EntryID]?, now: QueueTime) async throws(QueueError) -> [EntryID]
    /// Deletes the selected entries with their bodies; returns how many. An entry in flight
    /// under a drainer that lives is refused with ``QueueError/entryInFlight(_:)``.
    func purge(_ selection: PurgeSelection, now: QueueTime) async throws(QueueError) -> Int
    /// In one transaction: the rows `selection` matches among `operation`'s states for it
    /// (``BulkOperation/states(of:)``, oldest first, at most its limit), then `operation` applied
    /// to those ``BulkOperation/plan(_:)`` picks (a retry makes them due now with a fresh
    /// budget; a purge deletes them and their bodies). With `dryRun`, changes nothing and
    /// previews the entries it would change. The store decides nothing of which entries change.
    func change(_ operation: BulkOperation, matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange
    /// The blocked entries among `ids` stop waiting for others: their links are dropped and each
    /// is pending, due now, in one transaction. Returns the ids released; an entry not blocked
    /// is left as it is.
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)``; then nothing changed.
    func release(_ ids: [EntryID], now: QueueTime) async throws(QueueError) -> [EntryID]
    /// Pauses `group`, or the whole queue for `nil`: no drainer of any process claims what a
    /// pause holds. Returns whether it was not paused yet.
    func pause(group: String?, now: QueueTime) async throws(QueueError) -> Bool
    /// Lifts the pause of `group`, or of the whole queue for `nil` (group pauses stay), and
    /// wakes the drainers. Returns whether there was one.
    func resume(group: String?) async throws(QueueError) -> Bool
    /// Lifts `origin`'s `Retry-After` pause and its shrunk concurrency (its limit stays), and
    /// wakes the drainers. Returns whether either was in force.
    func resume(origin: String, now: QueueTime) async throws(QueueError) -> Bool
}
