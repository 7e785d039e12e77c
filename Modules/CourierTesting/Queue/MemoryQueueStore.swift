import Foundation
import HTTPCore
import OfflineQueueCore

/// An offline queue's rows in this process's memory: a queue for tests that needs no file and
/// no database, with the behaviour of the SQLite and PostgreSQL stores (the same
/// store-conformance suite runs against all three).
///
/// Open queues over it with `OfflineQueue.inMemory(_:configuration:client:monitor:)`. Every
/// queue opened over one store shares its entries, as processes share a file: each is a
/// drainer of its own, so a test can have two drainers race for entries, or one close (its
/// claims are then taken back by the next claim of another, as when a process dies).
///
/// ```swift
/// let store = MemoryQueueStore()
/// let sender = OfflineQueue.inMemory(store, client: client)
/// let drainer = OfflineQueue.inMemory(store, client: client)   // another drainer, same entries
/// _ = try await sender.enqueue(method: "POST", url: "https://api.example.com/events")
/// let summary = try await drainer.drain()   // summary.delivered == 1
/// ```
///
/// What it keeps: every entry with its state, attempts, times and last outcome; bodies too
/// large for a row (`QueueConfiguration.inlineBodyLimit`) in memory too, by name, as the
/// other stores keep them in files or chunks; pauses; idempotency keys. What it does not: it
/// survives nothing (the rows end with the process), and a reboot of a test's
/// `ManualQueueClock` is outside its world (it compares boot-clock readings as they are, as
/// one process in one boot does). Time rules use the queue's clock, so a
/// `ManualQueueClock` moves backoffs and leases here as it does on a file.
///
/// Thread-safe: every call takes one lock for as long as it reads or changes the rows, never
/// across a suspension, so each call is one transaction.
public final class MemoryQueueStore: Sendable {
    let state = LockedBox(MemoryQueueState())
    /// The wake-ups of the drainers watching for work, by owner.
    let watchers = LockedBox<[String: @Sendable () -> Void]>([:])
    /// Names this store in messages (``location``).
    let name = "memory:" + UUID().uuidString.prefix(8).lowercased()
    /// Numbers the drainers of this store.
    let drainers = LockedBox(0)
    /// Those awaiting outcomes (``MemoryQueueSession/observeSettlements(_:)``).
    let settled = SettlementObservers()

    /// An empty store: no entries, bodies, pauses or idempotency keys.
    public init() {}

    /// Calls every drainer's wake-up, outside the locks: an enqueue, a retry or a resume made
    /// entries due.
    func ring() {
        for wake in watchers.current.values { wake() }
    }
}

extension MemoryQueueStore {
    /// Whether a body kept apart under `name` is still held: for tests of the contract, which
    /// ask each store the same.
    package func keepsBody(_ name: String) -> Bool {
        state.withLock { $0.bodies[name] != nil }
    }
}
