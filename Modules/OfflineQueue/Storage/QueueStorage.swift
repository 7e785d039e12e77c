package import Foundation
package import HTTPCore

/// The storage contract: every read and write the engine (``OfflineQueue``, the drain, the
/// service) and `sync` make, and nothing else. Two stores keep it: ``QueueStore`` (SQLite, one
/// host, the default) and the PostgreSQL store of `OfflineQueuePostgres` (a fleet).
///
/// The behaviour is one, whichever store holds the rows: the states and their transitions
/// (decided by ``EntryLifecycle``, never by a store), claims under a lease with owner liveness
/// beating the lease, one open head per group, priorities, idempotency-key de-duplication,
/// bodies too large for a row kept apart and streamed, dead letters, retention, counts. The
/// behaviour suite in `Tests/OfflineQueueTests` runs against both.
///
/// Time. The engine hands every call its clock's reading (``QueueTime``); each store turns it
/// into the time its rules compare: SQLite into this boot's clock (no wall-clock step moves a
/// rule), PostgreSQL into the server's clock as this host's boot clock carries it forward
/// from a reading taken at connection (one clock for the whole fleet, and still no local step
/// moves a rule). An entry handed back by a claim carries ``QueueEntry/budgetUptime`` on the
/// caller's boot clock, so the lifecycle measures its age the same way on both.
///
/// Every method throws ``QueueError`` only, and leaves nothing half done when it throws.
package protocol QueueStorage: Sendable {
    /// Where the rows live, for messages: a file path, or a database URL without its password.
    var location: String { get }
    /// How this drainer is named in the entries it claims.
    var owner: String { get }

    /// Takes this drainer's hold on its claims, which dies with it (a kernel lock on the
    /// file's host; a connection's advisory lock on PostgreSQL), unless held already. Called
    /// before the first claim, so every entry naming ``owner`` was claimed while the hold was
    /// held. A store that lost its hold (a cut connection) takes a new one under a new name.
    func acquireOwnership() async throws(QueueError)

    /// Calls `wake` whenever another process enqueues, where the store can tell at once
    /// (PostgreSQL's `LISTEN`/`NOTIFY`); a store that cannot never calls it, and a service
    /// then looks at its poll interval.
    func observeRemoteEnqueues(_ wake: @escaping @Sendable () -> Void)

    /// Lets go of connections and background work; the store is not used afterwards.
    func shutDown() async

    // MARK: Writing entries

    /// Inserts `entries` in one transaction: all or none. An entry whose idempotency key is
    /// stored already is not inserted; its ticket points at the stored entry
    /// (``Ticket/deduplicated``). Returns once the rows are durable.
    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket]
    /// Keeps a body too large for a row, streamed from `stream` without holding it whole;
    /// returns its reference (``StoredBody/file(name:length:)``) for ``insert(_:now:)``.
    func storeBody(_ stream: ByteStream) async throws(QueueError) -> StoredBody
    /// Forgets bodies stored for entries that were not inserted (a failed or deduplicated
    /// enqueue). Best effort: what remains is swept by ``sweepOrphanBodies()``.
    func discardBodies(_ bodies: [StoredBody]) async
    /// The body of an entry, as the request sent at replay streams it.
    func replayBody(_ body: StoredBody) throws(QueueError) -> RequestBody

    /// Makes these entries due now with a fresh attempt budget (`nil`: every dead entry).
    /// Delivered entries are left alone. Returns the ids changed.
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)`` or ``QueueError/entryInFlight(_:)``; then
    ///   nothing changed.
    func retry(ids: [EntryID]?, now: QueueTime) async throws(QueueError) -> [EntryID]
    /// Deletes the selected entries with their bodies; returns how many. An entry in flight
    /// under a drainer that lives is refused with ``QueueError/entryInFlight(_:)``.
    func purge(_ selection: PurgeSelection, now: QueueTime) async throws(QueueError) -> Int

    /// Makes the pending and dead entries `selection` matches due now with a fresh budget, in
    /// one transaction; entries in flight are skipped. With `dryRun`, changes nothing.
    func retry(matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange
    /// Deletes the entries `selection` matches with their bodies, in one transaction; an entry
    /// in flight under a drainer that lives is skipped. With `dryRun`, changes nothing.
    func purge(matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange
    /// Pauses `group`, or the whole queue for `nil`: no drainer of any process claims what a
    /// pause holds. Returns whether it was not paused yet.
    func pause(group: String?, now: QueueTime) async throws(QueueError) -> Bool
    /// Lifts the pause of `group`, or of the whole queue for `nil`. Returns whether there was one.
    func resume(group: String?) async throws(QueueError) -> Bool
    /// The pauses in force and the pending entries they hold.
    func pauseStatus() async throws(QueueError) -> PauseStatus

    // MARK: The drain

    /// Records `settlements`, runs `chores`, and claims up to `claimLimit` due entries for
    /// ``owner`` under `lease`, in one transaction: the highest priority first, then the
    /// oldest, only the first open entry of each group, never one claimed by another drainer.
    /// `attemptedSince` (a boot-clock reading) skips entries attempted since then.
    func settleAndClaim(
        _ settlements: [Settlement], now: QueueTime, claimLimit: Int, lease: Duration, attemptedSince: Double?, chores: ClaimChores
    ) async throws(QueueError) -> ClaimResult
    /// Records `settlements` alone. One whose claim ``owner`` no longer holds changes nothing;
    /// those ids are returned.
    func settle(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID>
    /// Sets aside the space that lets a drain record what it sent when the disk fills
    /// (``settleOnFullDisk(_:now:)``), unless it is set aside already: on SQLite a preallocated
    /// file beside the queue. A store whose disk is not the caller's (PostgreSQL) keeps none.
    ///
    /// - Throws: ``QueueError/diskFull(path:)`` when the disk has no room for it: the drain
    ///   then sends nothing, since it could not be sure to record what it sent.
    func holdReserve() async throws(QueueError)
    /// Records `settlements` after a commit of the drain failed with a full disk, in the space
    /// ``holdReserve()`` set aside, which it gives back first. Returns, as ``settle(_:now:)``
    /// does, the ids whose claim ``owner`` no longer holds.
    ///
    /// Settlements are written in order, each as soon as it can be, so those before a failure
    /// stay recorded when it throws.
    func settleOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID>
    /// Makes the entries that wait only for the network due now. Returns how many.
    func wakeNetworkWaiters(now: QueueTime) async throws(QueueError) -> Int
    /// Extends ``owner``'s leases on `ids` to `lease` from `now`; entries it lost are left alone.
    func renewLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError)

    // MARK: Reading

    /// The entry with `id`; its due time on the boot clock of `now` (``QueueEntry/nextDue``).
    func entry(_ id: EntryID, now: QueueTime) async throws(QueueError) -> QueueEntry?
    func entry(idempotencyKey key: String, now: QueueTime) async throws(QueueError) -> QueueEntry?
    /// Entries matching `filter`, oldest first.
    func entries(_ filter: EntryFilter, now: QueueTime) async throws(QueueError) -> [QueueEntry]
    /// How many entries are in each state, the oldest pending, the next due time, and the
    /// drainers holding entries (those that are gone counted apart).
    func counts(now: QueueTime) async throws(QueueError) -> QueueCounts

    // MARK: Upkeep

    /// Deletes delivered entries that finished before `cutoff`, with their bodies, in short
    /// transactions. Dead and open entries are never touched.
    func deleteDelivered(finishedBefore cutoff: Date) async throws(QueueError) -> RetentionSummary
    /// Gives free space back where the store can (SQLite's free pages); returns how much.
    func releaseFreePages() async throws(QueueError) -> Int
    /// Removes bodies no entry references, left by a crash between storing a body and
    /// committing its entry (only those older than a grace period, so an enqueue under way
    /// keeps its own).
    func sweepOrphanBodies() async throws(QueueError)
    /// The store's own consistency check: `["ok"]` when sound.
    func integrityCheck() async throws(QueueError) -> [String]
}

/// One finished attempt, to record.
package struct Settlement: Sendable {
    package var id: EntryID
    package var transition: Transition

    package init(id: EntryID, transition: Transition) {
        self.id = id
        self.transition = transition
    }
}

/// What a claim does besides claiming.
package struct ClaimChores: Sendable {
    /// Carry rows of another boot over to this one (at the start of a drain; a store whose
    /// time does not depend on the boot has nothing to do).
    package var carryOver = false
    /// Take back the entries of drainers that are gone (at most about once a second).
    package var reclaimOrphans = false
    /// The longest wait a row from another boot may keep (the policy's longest delay).
    package var maxDelay: Duration = .seconds(3600)

    package init(carryOver: Bool = false, reclaimOrphans: Bool = false, maxDelay: Duration = .seconds(3600)) {
        self.carryOver = carryOver
        self.reclaimOrphans = reclaimOrphans
        self.maxDelay = maxDelay
    }
}

/// What one ``QueueStorage/settleAndClaim(_:now:claimLimit:lease:attemptedSince:chores:)`` did.
package struct ClaimResult: Sendable {
    /// Settlements whose lease this drainer no longer held.
    package var lost: Set<EntryID> = []
    /// Entries claimed, in claim order.
    package var claimed: [QueueEntry] = []
    /// Entries taken back from drainers that are gone.
    package var reclaimed = 0

    package init(lost: Set<EntryID> = [], claimed: [QueueEntry] = [], reclaimed: Int = 0) {
        self.lost = lost
        self.claimed = claimed
        self.reclaimed = reclaimed
    }
}

/// A request on its way into the store: everything but what the store assigns.
package struct NewEntry: Sendable {
    package var idempotencyKey: String
    package var method: String
    package var url: String
    package var headers: [StoredHeader]
    package var body: StoredBody?
    package var scopes: [String]
    package var name: String
    package var group: String?
    package var priority: Int
    package var timeout: Duration?
    package var notBefore: Date?

    package init(
        idempotencyKey: String, method: String, url: String, headers: [StoredHeader], body: StoredBody?, scopes: [String],
        name: String, group: String?, priority: Int, timeout: Duration?, notBefore: Date?
    ) {
        self.idempotencyKey = idempotencyKey
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.scopes = scopes
        self.name = name
        self.group = group
        self.priority = priority
        self.timeout = timeout
        self.notBefore = notBefore
    }
}
