package import Foundation

/// The parts this package's three stores are written in, finer than the contract: each of the
/// contract's requests that names one of a few related changes or reads (a drain's
/// preparation, a pause or resume, what holds entries back, the links, the cleaning, the seal
/// catalog with a key check, the signals) is answered here, once, from them. A store may answer
/// those requests itself instead (in one round trip, say) and need none of these.
package protocol QueueStoreParts: QueueStorage {
    /// Takes this drainer's hold on its claims, which dies with it, unless held already.
    func takeOwnership() async throws(QueueError)
    /// Sets aside the space that lets a drain record what it sent when the disk fills.
    func holdDiskReserve() async throws(QueueError)
    /// Stores the fleet's limits by origin, replacing the stored ones.
    func writeOriginLimits(_ limits: [FlowControl.OriginLimit], now: QueueTime) async throws(QueueError)
    /// Makes the entries that wait only for the network due now; returns how many.
    func wakeWaiters(now: QueueTime) async throws(QueueError) -> Int
    /// Records settlements alone; returns those whose claim ``QueueDrainStorage/owner`` no longer holds.
    func recordSettlements(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID>
    /// Records settlements in the space set aside for a full disk, which it gives back first.
    func recordOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID>
    /// Extends ``QueueDrainStorage/owner``'s leases on `ids`.
    func extendLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError)
    /// Calls `wake` whenever another process enqueues.
    func watchRemoteEnqueues(_ wake: @escaping @Sendable () -> Void)
    /// Calls `wake` whenever entries settle, until the watch stops.
    func watchSettlements(_ wake: @escaping @Sendable () -> Void) -> SettlementWatch
    /// Pauses a group, or the queue for `nil`; whether it was not paused yet.
    func addPause(group: String?, now: QueueTime) async throws(QueueError) -> Bool
    /// Lifts a group's pause, or the queue's for `nil`, and wakes the drainers; whether there was one.
    func removePause(group: String?) async throws(QueueError) -> Bool
    /// Lifts an origin's pause, shrunk concurrency and open circuit; whether any was in force.
    func resumeOriginFlow(origin: String, now: QueueTime) async throws(QueueError) -> Bool
    /// The pauses in force and the pending entries they hold.
    func readPauses() async throws(QueueError) -> PauseStatus
    /// The origins whose flow is held.
    func readOriginFlows(now: QueueTime) async throws(QueueError) -> [FlowControl.OriginStatus]
    /// The links whose child and parent are both blocked.
    func readBlockedLinks() async throws(QueueError) -> [DependencyRule.Link]
    /// The entries `id` waits for and those that wait for it.
    func readDependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies
    /// Deletes the delivered entries that finished before `cutoff`, with their bodies.
    func deleteDeliveredEntries(finishedBefore cutoff: Date) async throws(QueueError) -> RetentionSummary
    /// Removes bodies no entry references, past a grace period.
    func sweepBodies() async throws(QueueError)
    /// Gives free space back; returns how much.
    func releasePages() async throws(QueueError) -> Int
    /// Records a key's check value unless one is recorded; returns the value recorded.
    func writeKeyCheck(keyID: String, checkValue: String) async throws(QueueError) -> String
    /// The seal catalog, entries counted or not.
    func readSealCatalog(countingEntries: Bool) async throws(QueueError) -> SealCatalog
}

extension QueueStoreParts {
    package func prepareDrain(_ preparation: DrainPreparation, now: QueueTime) async throws(QueueError) -> Int {
        if let limits = preparation.originLimits { try await writeOriginLimits(limits, now: now) }
        if preparation.takesOwnership {
            try await takeOwnership()
            try await holdDiskReserve()
        }
        return preparation.wakesNetworkWaiters ? try await wakeWaiters(now: now) : 0
    }

    /// What a commit does before it claims: the leases it renews, and, when it claims nothing,
    /// the settlements alone (on a full disk, in the reserve). `nil`: the store's claim goes on.
    package func commitWithoutClaim(
        _ settlements: [Settlement], now: QueueTime, lease: Duration, chores: ClaimChores
    ) async throws(QueueError) -> ClaimResult? {
        if !chores.renewing.isEmpty { try await extendLeases(chores.renewing, now: now, lease: lease) }
        guard !chores.claims else { return nil }
        guard !settlements.isEmpty else { return ClaimResult() }
        return ClaimResult(lost: chores.onFullDisk ? try await recordOnFullDisk(settlements, now: now) : try await recordSettlements(settlements, now: now))
    }

    package func observe(_ signal: StoreSignal, _ wake: @escaping @Sendable () -> Void) -> SettlementWatch {
        switch signal {
        case .remoteEnqueues:
            watchRemoteEnqueues(wake)
            return SettlementWatch {}
        case .settlements:
            return watchSettlements(wake)
        }
    }

    package func setPause(_ change: PauseChange, now: QueueTime) async throws(QueueError) -> Bool {
        switch change {
        case .pause(let group): try await addPause(group: group, now: now)
        case .resume(let group): try await removePause(group: group)
        case .resumeOrigin(let origin): try await resumeOriginFlow(origin: origin, now: now)
        }
    }

    package func holds(now: QueueTime) async throws(QueueError) -> QueueHolds {
        QueueHolds(pauses: try await readPauses(), origins: try await readOriginFlows(now: now))
    }

    package func links(_ scope: LinkScope) async throws(QueueError) -> [DependencyRule.Link] {
        switch scope {
        case .blocked: try await readBlockedLinks()
        case .entry(let id): DependencyRule.links(of: id, try await readDependencies(of: id))
        }
    }

    package func clean(_ cleaning: StoreCleaning) async throws(QueueError) -> RetentionSummary {
        var summary = RetentionSummary()
        if let cutoff = cleaning.deliveredBefore { summary = try await deleteDeliveredEntries(finishedBefore: cutoff) }
        if cleaning.sweepsOrphanBodies { try await sweepBodies() }
        if cleaning.releasesFreePages { summary.releasedPages = try await releasePages() }
        return summary
    }

    package func sealCatalog(countingEntries: Bool, recording check: KeyCheck?) async throws(QueueError) -> SealCatalog {
        if let check { _ = try await writeKeyCheck(keyID: check.keyID, checkValue: check.value) }
        return try await readSealCatalog(countingEntries: countingEntries)
    }
}
