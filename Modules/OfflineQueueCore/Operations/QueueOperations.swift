import Foundation
import HTTPCore

/// The operator's role: what people, `sync` and the console do to a queue (look entries up,
/// count them, read the overview, retry, purge, pause, resume). It holds the operator's part of
/// the store (``QueueOperatorStorage``) and nothing else of the queue: no client, no drain, no
/// way to insert. ``OfflineQueue`` hands its calls here.
///
/// The reads an operator's change makes stale (the counts and the overview kept for
/// ``OfflineQueue/recentCounts(maxAge:)``) are forgotten by the change itself, and a change
/// that makes entries due wakes this process's drain (``wake``).
struct QueueOperations: Sendable {
    let store: any QueueOperatorStorage
    let clock: QueueClock
    /// Fired when a change makes entries due, so a running service drains at once.
    let wake: WakeSignal
    /// The store calls under way, for a service's watchdog.
    let watch: ServiceWatch
    let metrics: QueueMetrics
    /// Takes the backlog of every count read, for the activity per minute.
    let activityBook: ActivityBook
    /// The counts of ``OfflineQueue/recentCounts(maxAge:)``, shared within the process.
    let countsCache: CountsCache
    /// The overview, read at most once per interval however many console viewers ask.
    let overviewCache: SharedRead<OverviewShape, QueueOverview>

    init(store: any QueueOperatorStorage, clock: QueueClock, wake: WakeSignal, watch: ServiceWatch, metrics: QueueMetrics, activityBook: ActivityBook) {
        self.store = store
        self.clock = clock
        self.wake = wake
        self.watch = watch
        self.metrics = metrics
        self.activityBook = activityBook
        countsCache = CountsCache(clock: clock)
        overviewCache = SharedRead(clock: clock)
    }

    // MARK: Looking

    func entry(_ id: EntryID) async throws(QueueError) -> QueueEntry? { try await store.entry(id, now: clock.now()) }

    func dependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies { try await store.dependencies(of: id) }

    func entry(idempotencyKey: String) async throws(QueueError) -> QueueEntry? {
        try await store.entry(idempotencyKey: idempotencyKey, now: clock.now())
    }

    func entries(_ filter: EntryFilter) async throws(QueueError) -> [QueueEntry] { try await store.entries(filter, now: clock.now()) }

    func entryPage(_ filter: EntryFilter, scanLimit: Int) async throws(QueueError) -> EntryPage {
        try await store.entryPage(filter, scanLimit: max(scanLimit, filter.limit), now: clock.now())
    }

    func count(matching selection: EntrySelection) async throws(QueueError) -> SelectionCount {
        try await store.count(matching: selection, now: clock.now())
    }

    func counts() async throws(QueueError) -> QueueCounts {
        var counts = try await watch.storeCall(.counts) { () async throws(QueueError) in try await store.counts(now: clock.now()) }
        if counts.blocked > 0 { counts.stuck = try await stuck().count }
        metrics.answered(.counts)
        activityBook.sample(counts)
        return counts
    }

    func recentCounts(maxAge: Duration) async throws(QueueError) -> QueueCounts {
        try await countsCache.counts(maxAge: maxAge) { [self] in
            do throws(QueueError) {
                return .success(try await counts())
            } catch {
                return .failure(error)
            }
        }
    }

    func recentOverview(maxAge: Duration, top: Int, window: Int) async throws(QueueError) -> QueueOverview {
        try await overviewCache.value(for: OverviewShape(top: top, window: window), maxAge: maxAge) { [self] in
            do throws(QueueError) {
                return .success(try await overview(top: top, window: window, countsMaxAge: maxAge))
            } catch {
                return .failure(error)
            }
        }
    }

    func overview(top: Int, window: Int, countsMaxAge: Duration) async throws(QueueError) -> QueueOverview {
        let window = max(0, window)
        // The three reads at once, each on a reader of its own (a SQLite queue open for writing
        // has a pool of them, PostgreSQL a pool of connections): the overview takes as long as
        // the longest of them rather than their sum.
        async let counts = Self.result { () async throws(QueueError) in try await recentCounts(maxAge: countsMaxAge) }
        async let pauses = Self.result { () async throws(QueueError) in try await store.pauseStatus(now: clock.now()) }
        async let tally = Self.result { () async throws(QueueError) in
            try await watch.storeCall(.counts) { () async throws(QueueError) in
                try await store.tally(newest: window, now: clock.now())
            }
        }
        let read = await (counts: counts, pauses: pauses, tally: tally)
        let tallied = try read.tally.get()
        metrics.answered(.tally)
        return QueueOverview(counts: try read.counts.get(), pauses: try read.pauses.get(), tally: tallied, window: window, top: top)
    }

    /// `body`'s value or error, for a child task whose error keeps its type.
    private static func result<T>(_ body: () async throws(QueueError) -> T) async -> Result<T, QueueError> {
        do throws(QueueError) {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// The blocked entries nothing will release (``DependencyRule/stuck(_:)``).
    func stuck() async throws(QueueError) -> Set<EntryID> {
        DependencyRule.stuck(try await store.blockedLinks())
    }

    func release(_ ids: [EntryID]) async throws(QueueError) -> [EntryID] {
        let released = try await store.release(ids, now: clock.now())
        forgetRecentReads()
        if !released.isEmpty { wake.fire() }
        return released
    }

    func pauses() async throws(QueueError) -> PauseStatus { try await store.pauseStatus(now: clock.now()) }

    func originFlows() async throws(QueueError) -> [FlowControl.OriginStatus] { try await store.originFlows(now: clock.now()) }

    // MARK: Changing

    func retry(_ ids: [EntryID]?) async throws(QueueError) -> [EntryID] {
        defer {
            forgetRecentReads()
            wake.fire()
        }
        return try await store.retry(ids: ids, now: clock.now())
    }

    func purge(_ selection: PurgeSelection) async throws(QueueError) -> Int {
        defer { forgetRecentReads() }
        return try await store.purge(selection, now: clock.now())
    }

    func retry(matching selection: EntrySelection, dryRun: Bool) async throws(QueueError) -> BulkChange {
        let change = try await change(.retry, matching: selection, dryRun: dryRun)
        if !dryRun && !change.ids.isEmpty {
            forgetRecentReads()
            wake.fire()
        }
        return change
    }

    func purge(matching selection: EntrySelection, dryRun: Bool) async throws(QueueError) -> BulkChange {
        let change = try await change(.purge, matching: selection, dryRun: dryRun)
        if !dryRun && !change.ids.isEmpty { forgetRecentReads() }
        return change
    }

    /// `operation` on what `selection` matches; nothing at all when it matches no state.
    private func change(_ operation: BulkOperation, matching selection: EntrySelection, dryRun: Bool) async throws(QueueError) -> BulkChange {
        guard !operation.states(of: selection).isEmpty else { return BulkChange(dryRun: dryRun) }
        return try await store.change(operation, matching: selection, now: clock.now(), dryRun: dryRun)
    }

    func pause(group: String?) async throws(QueueError) -> Bool {
        defer { forgetRecentReads() }
        return try await store.pause(group: group, now: clock.now())
    }

    func resume(group: String?) async throws(QueueError) -> Bool {
        let lifted = try await store.resume(group: group, now: clock.now())
        forgetRecentReads()
        if lifted { wake.fire() }
        return lifted
    }

    func resume(origin: String) async throws(QueueError) -> Bool {
        let lifted = try await store.resume(origin: origin, now: clock.now())
        if lifted { wake.fire() }
        return lifted
    }

    /// Forgets the counts and the overview kept after an operator's change, so that they show it.
    func forgetRecentReads() {
        countsCache.invalidate()
        overviewCache.invalidate()
    }
}
