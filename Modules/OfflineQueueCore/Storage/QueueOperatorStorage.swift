/// The operator's role of the storage contract (``QueueStorage``): what people, `sync` and
/// dashboards do to a queue: look (entries, counts, pauses) and act (retry, purge, pause,
/// resume). Every change is one transaction, and an entry in flight under a drainer that
/// lives is never changed under it.
///
/// ```swift
/// let dead = try await store.entries(EntryQuery(states: [.dead], limit: 100), now: clock.now()).entries
/// let change = try await store.change(.retry, matching: EntrySelection(states: [.dead], status: 500...599),
///                                     now: clock.now(), dryRun: false)
/// _ = try await store.setPause(.pause(group: "user-42"), now: clock.now())
/// ```
package protocol QueueOperatorStorage: Sendable {
    // MARK: Reading

    /// The entries `query` asks for (``EntryQuery``), oldest first, each with its due time on
    /// the boot clock of `now` (``QueueEntry/nextDue``), and where the next page starts: after
    /// the last entry of a full page, after the last row examined when a page's scan ended
    /// first, `nil` when no row of its states is left (a query without a scan limit may name
    /// the last entry of a full page when nothing follows it).
    func entries(_ query: EntryQuery, now: QueueTime) async throws(QueueError) -> EntryPage
    /// How many entries `selection` matches, every state when it names none (its limit ignored).
    func count(matching selection: EntrySelection, now: QueueTime) async throws(QueueError) -> SelectionCount
    /// The entries by group, name and state among the `newest` entries (a walk of the id order
    /// from the end, bounded however many there are), the entries waiting for the network,
    /// and the deliveries of the last one and five minutes.
    func tally(newest: Int, now: QueueTime) async throws(QueueError) -> EntryTally
    /// How many entries are in each state, the oldest pending, the next due time, and the
    /// drainers holding entries (those that are gone counted apart).
    func counts(now: QueueTime) async throws(QueueError) -> QueueCounts
    /// What holds entries back: the pauses in force with the pending entries they hold, and
    /// the origins whose flow is held (``FlowControl``): paused, shrunk, limited or with an
    /// open circuit, with their entries in flight.
    func holds(now: QueueTime) async throws(QueueError) -> QueueHolds
    /// Links of the dependency graph (``LinkScope``): those of one entry (to the entries it
    /// waits for, with its ``ParentDeathPolicy``, and from those that wait for it; none for an
    /// entry the queue does not hold), or those whose child and parent are both blocked and
    /// the parent not delivered, which ``DependencyRule/stuck(_:)`` reads (none for most
    /// queues, which hold no blocked entry). In id order.
    func links(_ scope: LinkScope) async throws(QueueError) -> [DependencyRule.Link]

    // MARK: Changing

    /// In one transaction: the rows `selection` matches among `operation`'s states for it
    /// (``BulkOperation/states(of:)``, oldest first, at most its limit), then `operation` applied
    /// to those ``BulkOperation/plan(_:)`` picks (a retry makes them due now with a fresh
    /// budget; a purge deletes them and their bodies). With `dryRun`, changes nothing and
    /// previews the entries it would change. The store decides nothing of which entries change.
    /// A release drops the links of the blocked entries it changes and makes each pending, due
    /// now.
    func change(_ operation: BulkOperation, matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange
    /// A pause or a resume (``PauseChange``), in one transaction: a pause of a group, or of
    /// the whole queue for `nil`, holds what it names from every drainer of any process; a
    /// resume lifts it (group pauses stay when the whole queue's is lifted), or lifts an
    /// origin's `Retry-After` pause, its shrunk concurrency and an open circuit (its limit
    /// stays), and wakes the drainers. Returns whether anything changed.
    func setPause(_ change: PauseChange, now: QueueTime) async throws(QueueError) -> Bool
}

/// The reads the engine and the tests spell by what they look for, each one query.
extension QueueOperatorStorage {
    /// The entry with `id`.
    package func entry(_ id: EntryID, now: QueueTime) async throws(QueueError) -> QueueEntry? {
        try await entries(EntryQuery(conditions: [.ids([id])], limit: 1), now: now).entries.first
    }

    /// The entry stored with this idempotency key.
    package func entry(idempotencyKey key: String, now: QueueTime) async throws(QueueError) -> QueueEntry? {
        try await entries(EntryQuery(conditions: [.idempotencyKey(key)], limit: 1), now: now).entries.first
    }

    /// Entries matching `filter`, oldest first.
    package func entries(_ filter: EntryFilter, now: QueueTime) async throws(QueueError) -> [QueueEntry] {
        try await entries(EntryQuery(filter), now: now).entries
    }

    /// Entries matching `filter` among the first `scanLimit` rows of its states past its cursor.
    package func entryPage(_ filter: EntryFilter, scanLimit: Int, now: QueueTime) async throws(QueueError) -> EntryPage {
        try await entries(EntryQuery(filter, scanLimit: scanLimit), now: now)
    }
}

/// Retry, purge and release by id or by state, written once over ``QueueOperatorStorage/change(_:matching:now:dryRun:)``:
/// which entries change is ``BulkOperation``'s rule, what is refused is decided here, and a
/// store writes neither.
extension QueueOperatorStorage {
    /// Makes these entries due now with a fresh attempt budget (`nil`: every dead entry).
    /// Delivered, blocked and superseded entries are left alone (``BulkOperation/retries(_:)``).
    /// Returns the ids given (`nil`: the dead entries changed).
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)`` or ``QueueError/entryInFlight(_:)`` for the
    ///   first id given that the queue does not hold or that is in flight; then nothing changed.
    package func retry(ids: [EntryID]?, now: QueueTime) async throws(QueueError) -> [EntryID] {
        guard let ids else {
            return try await change(.retry, matching: EntrySelection(states: [.dead]), now: now, dryRun: false).ids
        }
        guard !ids.isEmpty else { return [] }
        let states = try await states(of: ids, now: now)
        for id in ids {
            guard let state = states[id] else { throw .noSuchEntry(id) }
            if state == .inflight { throw .entryInFlight(id) }
        }
        _ = try await change(.retry, matching: EntrySelection(ids: ids), now: now, dryRun: false)
        return ids
    }

    /// Deletes the selected entries with their bodies; returns how many. By state, an entry in
    /// flight is never purged; by id, one in flight under a drainer that lives is refused.
    ///
    /// - Throws: ``QueueError/entryInFlight(_:)`` or ``QueueError/noSuchEntry(_:)`` for the
    ///   first id given that is held or that the queue does not hold; then nothing changed.
    package func purge(_ selection: PurgeSelection, now: QueueTime) async throws(QueueError) -> Int {
        switch selection {
        case .states(let states, let before):
            let chosen = states.subtracting([.inflight])
            guard !chosen.isEmpty else { return 0 }
            var matching = EntrySelection(states: chosen)
            matching.finishedBefore = before
            return try await change(.purge, matching: matching, now: now, dryRun: false).ids.count
        case .ids(let given):
            guard !given.isEmpty else { return 0 }
            let matching = EntrySelection(ids: given)
            // What the purge would do, read first: a refusal changes nothing.
            let preview = try await change(.purge, matching: matching, now: now, dryRun: true)
            let (held, found) = (Set(preview.skipped), Set(preview.ids))
            for id in given {
                if held.contains(id) { throw .entryInFlight(id) }
                if !found.contains(id) { throw .noSuchEntry(id) }
            }
            return try await change(.purge, matching: matching, now: now, dryRun: false).ids.count
        }
    }

    /// The blocked entries among `ids` stop waiting for others: their links are dropped and
    /// each is pending, due now. Returns the ids released, in id order; an entry not blocked is
    /// left as it is.
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)``; then nothing changed.
    package func release(_ ids: [EntryID], now: QueueTime) async throws(QueueError) -> [EntryID] {
        guard !ids.isEmpty else { return [] }
        let states = try await states(of: ids, now: now)
        if let missing = ids.first(where: { states[$0] == nil }) { throw .noSuchEntry(missing) }
        return try await change(.release, matching: EntrySelection(states: [.blocked], ids: ids), now: now, dryRun: false).ids
    }

    /// The state of each of `ids` the queue holds.
    private func states(of ids: [EntryID], now: QueueTime) async throws(QueueError) -> [EntryID: EntryState] {
        let unique = Array(Set(ids)).sorted()
        let found = try await entries(EntryQuery(conditions: [.ids(unique)], limit: unique.count), now: now).entries
        return Dictionary(found.map { ($0.id, $0.state) }, uniquingKeysWith: { first, _ in first })
    }
}

/// A change of the queue's pauses (``QueueOperatorStorage/setPause(_:now:)``).
package enum PauseChange: Sendable, Hashable {
    /// Pause a group, or the whole queue for `nil`.
    case pause(group: String?)
    /// Lift a group's pause, or the whole queue's for `nil`.
    case resume(group: String?)
    /// Lift an origin's pause, shrunk concurrency and open circuit.
    case resumeOrigin(String)
}

/// What holds a queue's entries back (``QueueOperatorStorage/holds(now:)``).
package struct QueueHolds: Sendable, Hashable {
    package var pauses: PauseStatus
    package var origins: [FlowControl.OriginStatus]

    package init(pauses: PauseStatus = PauseStatus(), origins: [FlowControl.OriginStatus] = []) {
        self.pauses = pauses
        self.origins = origins
    }
}

/// The pauses as the engine and the tests spell them, each one ``QueueOperatorStorage/setPause(_:now:)``.
extension QueueOperatorStorage {
    package func pause(group: String?, now: QueueTime) async throws(QueueError) -> Bool {
        try await setPause(.pause(group: group), now: now)
    }

    package func resume(group: String?, now: QueueTime) async throws(QueueError) -> Bool {
        try await setPause(.resume(group: group), now: now)
    }

    package func resume(origin: String, now: QueueTime) async throws(QueueError) -> Bool {
        try await setPause(.resumeOrigin(origin), now: now)
    }

    package func pauseStatus(now: QueueTime) async throws(QueueError) -> PauseStatus {
        try await holds(now: now).pauses
    }

    package func originFlows(now: QueueTime) async throws(QueueError) -> [FlowControl.OriginStatus] {
        try await holds(now: now).origins
    }
}

/// Which links ``QueueOperatorStorage/links(_:)`` reads.
package enum LinkScope: Sendable, Hashable {
    /// The links to and from one entry.
    case entry(EntryID)
    /// The links between blocked entries whose parent is not delivered.
    case blocked
}

extension QueueOperatorStorage {
    /// The entries `id` waits for and the entries that wait for it.
    package func dependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies {
        let links = try await links(.entry(id))
        let parents = links.filter { $0.child == id }
        return EntryDependencies(
            parents: parents.map(\.parent).sorted(), children: links.filter { $0.parent == id }.map(\.child).sorted(),
            whenParentDies: parents.first?.whenParentDies
        )
    }

    /// The links between blocked entries, for ``DependencyRule/stuck(_:)``.
    package func blockedLinks() async throws(QueueError) -> [DependencyRule.Link] {
        try await links(.blocked)
    }
}
