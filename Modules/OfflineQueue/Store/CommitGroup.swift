import Foundation
import GRDB
import HTTPCore

/// Inserts from concurrent enqueuers share one transaction, and so one `fsync`: a group
/// commit.
///
/// Each caller hands its entries over and waits; the first one to find no commit scheduled
/// schedules one on the database's writer queue. When that commit starts it takes every
/// entry handed over by then (those that arrived while the previous commit waited for the
/// disk), inserts each caller's entries in a savepoint of their own, commits, and only then
/// answers each caller: an enqueue still returns only when its row is on disk. One caller's
/// refused insert (a full disk is everyone's; a constraint is its own) rolls back its savepoint
/// alone. Callers that arrive during a commit go into the next one, which is scheduled behind
/// whatever else waits for the writer, so a stream of enqueues cannot starve a drain's commits.
final class CommitGroup: Sendable {
    private struct Waiter: Sendable {
        let entries: [NewEntry]
        let now: QueueTime
        let continuation: CheckedContinuation<Result<[Ticket], QueueError>, Never>
    }

    private struct State {
        var waiters: [Waiter] = []
        var scheduled = false
    }

    private let writer: any DatabaseWriter
    private let path: String
    private let state = LockedBox(State())

    init(writer: any DatabaseWriter, path: String) {
        self.writer = writer
        self.path = path
    }

    /// Inserts `entries` in a transaction it may share with other callers; returns when that
    /// transaction committed.
    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket] {
        let result = await withCheckedContinuation { continuation in
            let schedule = state.withLock { state -> Bool in
                state.waiters.append(Waiter(entries: entries, now: now, continuation: continuation))
                defer { state.scheduled = true }
                return !state.scheduled
            }
            if schedule { writer.asyncWriteWithoutTransaction { db in self.commit(db) } }
        }
        return try result.get()
    }

    /// On the writer queue: one transaction for everyone waiting, then the next one scheduled
    /// if more arrived meanwhile.
    private func commit(_ db: Database) {
        let batch = state.withLock { state -> [Waiter] in
            defer { state.waiters.removeAll(keepingCapacity: true) }
            return state.waiters
        }
        var results: [Result<[Ticket], QueueError>] = []
        results.reserveCapacity(batch.count)
        do {
            try db.inImmediateTransaction {
                if batch.count == 1 {
                    // Alone: no savepoint needed, a failure rolls the transaction back.
                    results.append(.success(try SQLiteQueueStore.insert(db, batch[0].entries, now: batch[0].now)))
                    return
                }
                for waiter in batch {
                    do {
                        try db.inSavepoint {
                            results.append(.success(try SQLiteQueueStore.insert(db, waiter.entries, now: waiter.now)))
                            return .commit
                        }
                    } catch {
                        results.append(.failure(SQLiteQueueStore.map(error, path: path, opening: false)))
                    }
                }
            }
        } catch {
            // The transaction did not commit: nobody's rows are stored.
            let failure = SQLiteQueueStore.map(error, path: path, opening: false)
            results = batch.map { _ in .failure(failure) }
        }
        for (waiter, result) in zip(batch, results) { waiter.continuation.resume(returning: result) }
        let again = state.withLock { state -> Bool in
            state.scheduled = !state.waiters.isEmpty
            return state.scheduled
        }
        if again { writer.asyncWriteWithoutTransaction { db in self.commit(db) } }
    }
}
