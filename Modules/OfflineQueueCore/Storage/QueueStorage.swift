/// The storage contract: every read and write the engine (``OfflineQueue``, the drain, the
/// service) and `sync` make, and nothing else, as six roles, each caller seeing only its own:
///
/// - ``QueueDrainStorage``: what a drain needs (claim, settle, give back, renew, wake).
/// - ``QueueEnqueueStorage``: what an enqueue needs (insert, bodies kept apart).
/// - ``QueueOperatorStorage``: what people and `sync` need (list, count, retry, purge, pause).
/// - ``QueueUpkeepStorage``: what keeps the store healthy (retention, orphan bodies, checks).
/// - ``QueueSealStorage``: what sealing at rest keeps (the queue's id, key checks) and re-sealing.
/// - ``QueueOutcomeStorage``: how entries ended (kept responses, word of settlements).
///
/// Three stores keep all six: ``SQLiteQueueStore`` (SQLite, one host, the default), the PostgreSQL
/// store of `OfflineQueuePostgres` (a fleet), and the in-memory store of `CourierTesting` (one
/// process, for tests).
///
/// The behaviour is one, whichever store holds the rows: the states and their transitions
/// (decided by ``EntryLifecycle``, never by a store), claims under a lease with owner liveness
/// beating the lease, one open head per group, priorities, idempotency-key de-duplication,
/// bodies too large for a row kept apart and streamed, dead letters, retention, counts. The
/// store-conformance suite (`Tests/OfflineQueueTests/StoreConformanceTests.swift`) is the
/// contract's definition and runs against every store; the behaviour suite in
/// `Tests/OfflineQueueTests` runs the engine on each.
///
/// Time. The engine hands every call its clock's reading (``QueueTime``); each store turns it
/// into the time its rules compare: SQLite into this boot's clock (no wall-clock step moves a
/// rule), PostgreSQL into the server's clock as this host's boot clock carries it forward
/// from one reading of it per boot (one clock for the whole fleet, and still no local step
/// moves a rule), the in-memory store compares the boot-clock readings as they are (it lives
/// within one process, so within one boot). An entry handed back by a claim carries
/// ``QueueEntry/budgetUptime`` on the caller's boot clock, so the lifecycle measures its age
/// the same way on all of them.
///
/// Every method throws ``QueueError`` only, and leaves nothing half done when it throws.
package protocol QueueStorage: QueueDrainStorage, QueueEnqueueStorage, QueueOperatorStorage, QueueUpkeepStorage, QueueSealStorage, QueueOutcomeStorage {
    /// Lets go of connections and background work; the store is not used afterwards.
    func shutDown() async
}
