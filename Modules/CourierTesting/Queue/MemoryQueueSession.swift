import Foundation
import HTTPCore
import OfflineQueueCore

/// One queue's view of a ``MemoryQueueStore``: the storage contract (``QueueStorage``) kept in
/// memory, as one drainer. Its hold on its claims lives from ``takeOwnership()`` until it
/// shuts down or goes away: then another drainer's next claim takes its entries back, as
/// when a process holding a file's entries dies.
final class MemoryQueueSession: QueueStoreParts {
    let store: MemoryQueueStore
    let owner: String
    private let wake = LockedBox<(@Sendable () -> Void)?>(nil)
    /// Bodies unreferenced for longer than this are swept, as on the other stores.
    static let orphanGrace: TimeInterval = 600

    init(store: MemoryQueueStore) {
        self.store = store
        let number = store.drainers.withLock { count -> Int in
            count += 1
            return count
        }
        let host = ProcessInfo.processInfo.hostName.replacingOccurrences(of: ":", with: "_")
        owner = "\(host):\(getpid()):memory\(number)"
    }

    deinit { release() }

    var location: String { store.name }

    private func release() {
        let owner = self.owner
        store.state.withLock { _ = $0.liveOwners.remove(owner) }
        store.watchers.withLock { $0[owner] = nil }
    }

    func takeOwnership() async throws(QueueError) {
        let owner = self.owner
        store.state.withLock { _ = $0.liveOwners.insert(owner) }
        if let wake = wake.current { store.watchers.withLock { $0[owner] = wake } }
    }

    func watchRemoteEnqueues(_ wake: @escaping @Sendable () -> Void) {
        self.wake.withLock { $0 = wake }
    }

    func shutDown() async { release() }

    // MARK: - Enqueue

    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket] {
        let tickets = try store.state.withLock { state in
            Result { () throws(QueueError) in try state.insert(entries, now: now) }
        }.get()
        if tickets.contains(where: { !$0.deduplicated }) { store.ring() }
        return tickets
    }

    func storeBody(_ stream: ByteStream) async throws(QueueError) -> StoredBody {
        var data = Data()
        do {
            for try await chunk in stream { data.append(chunk) }
        } catch {
            throw .io(path: location, reason: "cannot read the body: \(error)")
        }
        let name = UUID().uuidString.lowercased()
        let body = data
        store.state.withLock { $0.bodies[name] = (body, Date()) }
        return .file(name: name, length: body.count)
    }

    func discardBodies(_ bodies: [StoredBody]) async {
        let names = bodies.compactMap { if case .file(let name, _) = $0 { name } else { nil } }
        guard !names.isEmpty else { return }
        store.state.withLock { state in
            for name in names { state.bodies[name] = nil }
        }
    }

    // MARK: - The drain

    func settleAndClaim(
        _ settlements: [Settlement], now: QueueTime, claimLimit: Int, lease: Duration, attemptedSince: Double?, chores: ClaimChores
    ) async throws(QueueError) -> ClaimResult {
        if let done = try await commitWithoutClaim(settlements, now: now, lease: lease, chores: chores) { return done }
        let owner = self.owner
        defer { if settlements.contains(where: \.ends) { store.settled.notify() } }
        return store.state.withLock { state in
            var result = ClaimResult()
            (result.opened, result.closed) = state.recordFlow(settlements, owner: owner, now: now, settings: chores.flow)
            result.lost = state.settle(settlements, owner: owner, now: now)
            if chores.reclaimOrphans { result.reclaimed = state.reclaimOrphans(owner: owner) }
            if claimLimit > 0 {
                if chores.reclaimOrphans { state.returnLapsedLeases(owner: owner, now: now) }
                let claimed = state.claim(limit: claimLimit, owner: owner, now: now, lease: lease, attemptedSince: attemptedSince, result: &result)
                result.claimed = claimed
            }
            return result
        }
    }

    func recordSettlements(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        let owner = self.owner
        defer { if settlements.contains(where: \.ends) { store.settled.notify() } }
        return store.state.withLock { state in
            state.recordFlow(settlements, owner: owner, now: now, settings: FlowSettings())
            return state.settle(settlements, owner: owner, now: now)
        }
    }

    func writeOriginLimits(_ limits: [FlowControl.OriginLimit], now: QueueTime) async throws(QueueError) {
        if store.state.withLock({ $0.writeOriginLimits(limits, now: now) }) { store.ring() }
    }

    // MARK: - Outcomes

    func keptResponse(of id: EntryID) async throws(QueueError) -> StoredResponse? {
        store.state.withLock { state in state.rows[id]?.entry.state == .delivered ? state.responses[id] : nil }
    }

    func wasIssued(_ id: EntryID) async throws(QueueError) -> Bool {
        id > 0 && id <= store.state.withLock { $0.lastID }
    }

    func watchSettlements(_ wake: @escaping @Sendable () -> Void) -> SettlementWatch {
        store.settled.observe(wake, start: { true }, stop: {})
    }

    /// Memory keeps no disk reserve.
    func holdDiskReserve() async throws(QueueError) {}

    func recordOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        try await recordSettlements(settlements, now: now)
    }

    func wakeWaiters(now: QueueTime) async throws(QueueError) -> Int {
        store.state.withLock { $0.wakeWaiters(now: now) }
    }

    func extendLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError) {
        let owner = self.owner
        store.state.withLock { $0.extendLeases(ids, owner: owner, now: now, lease: lease) }
    }

    func replayBody(_ body: StoredBody) throws(QueueError) -> RequestBody {
        switch body {
        case .inline(let data):
            return .data(data)
        case .file(let name, _):
            guard let data = store.state.withLock({ $0.bodies[name]?.data }) else {
                throw .io(path: location, reason: "the stored body \(name) is missing")
            }
            return .data(data)
        }
    }

    // MARK: - Operators

    func entries(_ query: EntryQuery, now: QueueTime) async throws(QueueError) -> EntryPage {
        store.state.withLock { state in
            if let scanLimit = query.scanLimit { return state.entryPage(query, scanLimit: scanLimit, now: now) }
            let found = state.entries(query, now: now)
            return EntryPage(entries: found, next: query.limit > 0 && found.count == query.limit ? found.last?.id : nil)
        }
    }

    func count(matching selection: EntrySelection, now: QueueTime) async throws(QueueError) -> SelectionCount {
        var all = selection
        all.limit = nil
        let found = store.state.withLock { $0.matching(all, states: selection.matchedStates, now: now) }
        return SelectionCount(count: found.count, newest: found.last?.entry.id)
    }

    func tally(newest: Int, now: QueueTime) async throws(QueueError) -> EntryTally {
        store.state.withLock { $0.tally(newest: newest, now: now) }
    }

    func counts(now: QueueTime) async throws(QueueError) -> QueueCounts {
        let owner = self.owner
        return store.state.withLock { $0.counts(now: now, owner: owner) }
    }

    func readPauses() async throws(QueueError) -> PauseStatus {
        store.state.withLock { $0.readPauses() }
    }

    func readDependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies {
        store.state.withLock { $0.readDependencies(of: id) }
    }

    func readBlockedLinks() async throws(QueueError) -> [DependencyRule.Link] {
        store.state.withLock { $0.readBlockedLinks() }
    }

    func change(_ operation: BulkOperation, matching selection: EntrySelection, now: QueueTime, dryRun: Bool) async throws(QueueError) -> BulkChange {
        let change = store.state.withLock { $0.change(operation, matching: selection, now: now, dryRun: dryRun) }
        if !dryRun && !change.ids.isEmpty {
            store.ring()
            if operation == .purge { store.settled.notify() }
        }
        return change
    }

    func addPause(group: String?, now: QueueTime) async throws(QueueError) -> Bool {
        store.state.withLock { state in
            guard state.pauses[group] == nil else { return false }
            state.pauses[group] = now.wall
            return true
        }
    }

    func removePause(group: String?) async throws(QueueError) -> Bool {
        let lifted = store.state.withLock { $0.pauses.removeValue(forKey: group) != nil }
        if lifted { store.ring() }
        return lifted
    }

    func resumeOriginFlow(origin: String, now: QueueTime) async throws(QueueError) -> Bool {
        let lifted = store.state.withLock { $0.resumeOriginFlow(origin: origin, now: now) }
        if lifted { store.ring() }
        return lifted
    }

    func readOriginFlows(now: QueueTime) async throws(QueueError) -> [FlowControl.OriginStatus] {
        store.state.withLock { $0.readOriginFlows(now: now) }
    }

    // MARK: - Upkeep

    func deleteDeliveredEntries(finishedBefore cutoff: Date) async throws(QueueError) -> RetentionSummary {
        let summary = store.state.withLock { $0.deleteDeliveredEntries(finishedBefore: cutoff) }
        if summary.deletedEntries > 0 { store.settled.notify() }
        return summary
    }

    /// Memory gives back what it frees at once: nothing to release.
    func releasePages() async throws(QueueError) -> Int { 0 }

    // MARK: - Sealing

    func readSealCatalog(countingEntries: Bool) async throws(QueueError) -> SealCatalog {
        store.state.withLock { $0.readSealCatalog(countingEntries: countingEntries) }
    }

    func writeKeyCheck(keyID: String, checkValue: String) async throws(QueueError) -> String {
        store.state.withLock { $0.writeKeyCheck(keyID: keyID, checkValue: checkValue) }
    }

    func reseal(_ updates: [ResealUpdate]) async throws(QueueError) -> Set<EntryID> {
        store.state.withLock { $0.reseal(updates) }
    }

    func sweepBodies() async throws(QueueError) {
        let cutoff = Date().addingTimeInterval(-Self.orphanGrace)
        store.state.withLock { $0.sweepOrphanBodies(storedBefore: cutoff) }
    }

    func integrityCheck() async throws(QueueError) -> [String] {
        let problems = store.state.withLock { $0.problems() }
        return problems.isEmpty ? ["ok"] : problems
    }

    func recordActivity(_ minutes: [ActivityMinute], keepingSince: Date) async throws(QueueError) {
        let oldest = ActivityMinute.number(of: keepingSince)
        store.state.withLock { state in
            for minute in minutes {
                state.activity[minute.number, default: ActivityMinute(minute: ActivityMinute.start(of: minute.number))].add(minute)
            }
            state.activity = state.activity.filter { $0.key >= oldest }
        }
    }

    func activity(since: Date) async throws(QueueError) -> [ActivityMinute] {
        let first = ActivityMinute.number(of: since)
        return store.state.withLock { state in state.activity.filter { $0.key >= first }.sorted { $0.key < $1.key }.map(\.value) }
    }
}
