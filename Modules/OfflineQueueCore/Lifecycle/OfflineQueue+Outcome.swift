import Foundation
import HTTPCore

/// How entries end, read or awaited by any process of the queue.
extension OfflineQueue {
    /// How often ``outcome(of:)`` looks again without word from the store: a safety net for a
    /// settlement whose word was lost (a PostgreSQL connection cut, a `.settled` file another
    /// user cannot touch), not the way it learns of one.
    static let outcomeRecheck = Duration.seconds(10)
    /// How often it looks when the store could not watch (``SettlementWatch/isLive``).
    static let unwatchedRecheck = Duration.seconds(1)

    /// How entry `id` ended, or `nil` while it is still open (pending, in flight, blocked).
    ///
    /// A delivered entry that kept its response (``EnqueueOptions/keepResponse``) comes with
    /// it, opened when it is sealed.
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)`` for an id the queue never gave;
    ///   ``QueueError/Kind/keyUnavailable`` for a sealed response and no keyring.
    public func currentOutcome(of id: EntryID) async throws(QueueError) -> EntryOutcome? {
        guard let entry = try await operations.entry(id) else {
            guard try await store.wasIssued(id) else { throw .noSuchEntry(id) }
            return .purged
        }
        switch entry.state {
        case .delivered:
            guard let stored = try await store.keptResponse(of: id) else { return .delivered(status: entry.lastStatus, response: nil) }
            return .delivered(status: entry.lastStatus, response: try await open(stored, of: entry))
        case .dead:
            return .dead(reason: entry.deadReason, error: entry.lastError)
        case .superseded:
            return .superseded(error: entry.lastError)
        default:
            return nil
        }
    }

    /// What a page or a command shows of the response `entry` kept: `nil` when it kept none or
    /// is not delivered, ``KeptResponseReading/sealed`` when it is sealed and this queue has no
    /// key to open it.
    package func keptResponse(of entry: QueueEntry) async throws(QueueError) -> KeptResponseReading? {
        guard entry.state == EntryState.delivered, entry.keepResponse != nil else { return nil }
        let outcome: EntryOutcome?
        do throws(QueueError) {
            outcome = try await currentOutcome(of: entry.id)
        } catch {
            if error.kind == QueueError.Kind.keyUnavailable { return .sealed }
            throw error
        }
        guard case .delivered(_, let response)? = outcome, let response else { return nil }
        return .kept(response)
    }

    /// The response `entry` kept, opened with the queue's keyring when it is sealed. Reads the
    /// queue's id and key checks and writes nothing, so a queue opened read-only opens it too.
    private func open(_ stored: StoredResponse, of entry: QueueEntry) async throws(QueueError) -> KeptResponse {
        guard let keyID = stored.keyID else { return try EntrySealing(queueID: UUID(), sealer: nil, mode: .off).open(stored, of: entry) }
        guard let sealer = configuration.sealing.sealer else {
            throw .keyUnavailable("the response entry \(entry.id) kept is sealed under key \(keyID), but no keyring was given")
        }
        let catalog = try await sealStore.sealCatalog()
        if let recorded = catalog.keyChecks[keyID], let held = sealer.keyCheckValue(ofKey: keyID), held != recorded {
            throw .keyUnavailable("key \(keyID) in the keyring is not the key this queue recorded under that id (its key-check value differs)")
        }
        return try EntrySealing(queueID: catalog.queueID, sealer: sealer, mode: .off).open(stored, of: entry)
    }

    /// Waits until entry `id` is delivered, dies or is removed, by any drainer of any process,
    /// and returns how it ended (with its kept response, when it kept one); `nil` when
    /// `timeout` passes first or the task is cancelled. Woken by the store when an entry
    /// settles (the `<db>.settled` file beside a SQLite queue, `NOTIFY` on PostgreSQL), not by
    /// a poll.
    ///
    /// ```swift
    /// let ticket = try await queue.enqueue(createNote, options: EnqueueOptions(keepResponse: ResponseKeeping()))
    /// if case .delivered(_, let response?) = try await queue.outcome(of: ticket.id) {
    ///     print(response.header("location") ?? "")
    /// }
    /// ```
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)`` for an id the queue never gave.
    public func outcome(of id: EntryID, timeout: Duration? = nil) async throws(QueueError) -> EntryOutcome? {
        try await outcome(of: id, timeout: timeout, recheck: Self.outcomeRecheck)
    }

    /// ``outcome(of:timeout:)`` looking again every `recheck` without word from the store: a
    /// test sets it beyond its hang guard, so only the store's word can wake it in time.
    package func outcome(of id: EntryID, timeout: Duration?, recheck: Duration) async throws(QueueError) -> EntryOutcome? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let settled = WakeSignal()
        // Watching before the first look: a settlement between the look and the wait still wakes it.
        let watch = await store.observeSettlements { settled.fire() }
        defer { watch.stop() }
        while true {
            let mark = settled.mark
            if let outcome = try await currentOutcome(of: id) { return outcome }
            // A store that could not watch leaves the looking to this loop, often.
            var wait = watch.isLive ? recheck : min(recheck, Self.unwatchedRecheck)
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return nil }
                wait = min(wait, left)
            }
            if Task.isCancelled { return nil }
            await settled.wait(after: mark, timeout: wait)
        }
    }
}

/// A kept response as ``OfflineQueue/keptResponse(of:)`` reads it for display.
package enum KeptResponseReading: Sendable {
    case kept(KeptResponse)
    /// Sealed, and the queue has no key to open it.
    case sealed
}
