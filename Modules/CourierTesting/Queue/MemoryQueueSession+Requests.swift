import Foundation
import HTTPCore
import OfflineQueueCore

/// The storage contract's requests that name one of a few related changes or reads, each
/// answered by this store's parts: the pauses (``PauseChange``), what holds entries back, the
/// cleaning (``StoreCleaning``), the seal catalog with a key check recorded.
extension MemoryQueueSession {
    func setPause(_ change: PauseChange, now: QueueTime) async throws(QueueError) -> Bool {
        switch change {
        case .pause(let group): try await pause(group: group, now: now)
        case .resume(let group): try await resume(group: group)
        case .resumeOrigin(let origin): try await resume(origin: origin, now: now)
        }
    }

    func holds(now: QueueTime) async throws(QueueError) -> QueueHolds {
        QueueHolds(pauses: try await pauseStatus(), origins: try await originFlows(now: now))
    }

    func clean(_ cleaning: StoreCleaning) async throws(QueueError) -> RetentionSummary {
        var summary = RetentionSummary()
        if let cutoff = cleaning.deliveredBefore { summary = try await deleteDelivered(finishedBefore: cutoff) }
        if cleaning.sweepsOrphanBodies { try await sweepOrphanBodies() }
        if cleaning.releasesFreePages { summary.releasedPages = try await releaseFreePages() }
        return summary
    }

    func sealCatalog(countingEntries: Bool, recording check: KeyCheck?) async throws(QueueError) -> SealCatalog {
        if let check { _ = try await recordKeyCheck(keyID: check.keyID, checkValue: check.value) }
        return try await sealCatalog(countingEntries: countingEntries)
    }

    func observe(_ signal: StoreSignal, _ wake: @escaping @Sendable () -> Void) -> SettlementWatch {
        switch signal {
        case .remoteEnqueues:
            watchRemoteEnqueues(wake)
            return SettlementWatch {}
        case .settlements:
            return watchSettlements(wake)
        }
    }

    func links(_ scope: LinkScope) async throws(QueueError) -> [DependencyRule.Link] {
        switch scope {
        case .blocked: try await blockedLinks()
        case .entry(let id): DependencyRule.links(of: id, try await dependencies(of: id))
        }
    }
}
