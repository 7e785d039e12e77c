import Foundation
import HTTPCore

/// The upkeep's role: what keeps a store healthy (retention of delivered entries, pages given
/// back, bodies no entry references, the consistency check). It holds the upkeep's part of the
/// store (``QueueUpkeepStorage``) and nothing else of the queue. ``OfflineQueue`` and its
/// ``QueueService`` hand their calls here.
struct QueueUpkeep: Sendable {
    let store: any QueueUpkeepStorage
    let clock: QueueClock
    /// How long delivered entries are kept (``QueueConfiguration/deliveredRetention``).
    let deliveredRetention: Duration?

    func applyRetention(now: Date?) async throws(QueueError) -> RetentionSummary {
        let cutoff = deliveredRetention.map { (now ?? clock.now().wall).addingTimeInterval(-$0.seconds) }
        // Also the pages a purge freed: one short transaction when there are none.
        return try await store.clean(StoreCleaning(deliveredBefore: cutoff))
    }

    func sweepOrphanBodies() async throws(QueueError) { try await store.sweepOrphanBodies() }

    func integrityCheck() async throws(QueueError) -> [String] { try await store.integrityCheck() }
}
