import Foundation
import GRDB
import GRDBSQLite
import HTTPCore

/// Checkpoints the write-ahead log on a connection and a thread of its own, so that the writer's
/// commits do not.
///
/// SQLite's default has the connection that commits copy the log into the file once the log
/// passes 1,000 pages, inside that commit: every few hundred deliveries a claim or a settle
/// would wait for the copy and its `fsync`, and the drain's sends would run out of claimed
/// entries (`BENCH_ONLY=drain-ceiling courier-bench --goals` shows the idle share). Here the writer's
/// log hook asks for a checkpoint while the log is past ``threshold`` pages and none is under
/// way; a `PASSIVE` checkpoint then copies what is there, beside the writer, which goes on
/// committing (SQLite lets a checkpoint and a writer run together in WAL mode). Each copies only
/// what the one before had not, and the writer starts the log over at the first write that
/// finds all of it copied.
///
/// Past ``limit`` pages (checkpoints that cannot keep up, or a checkpointer that is gone) the
/// writer checkpoints in its commit, as SQLite would, so the log stays bounded (20 MiB of 4 KiB
/// pages). Only a queue of `.normal` durability has a checkpointer: with `.full`, every commit
/// waits for an `fsync` of the log, which a checkpoint beside it would only slow down. Durability
/// is unchanged: a commit is in the log, synced or not per the queue's durability, before the
/// call returns, whoever copies it into the file later.
final class Checkpointer: Sendable {
    /// Log pages past which a checkpoint is asked for: SQLite's default for its own.
    static let threshold: Int32 = 1_000
    /// Log pages past which the writer checkpoints in its commit.
    static let limit: Int32 = 5_000

    private struct State {
        var connection: DatabaseQueue?
        var scheduled = false
        var closed = false
        /// Checkpoints run here, and their failures (a busy file: the next request tries again).
        var completed = 0
        var failed = 0
    }

    private let path: String
    private let state = LockedBox(State())
    private let queue = DispatchQueue(label: "courier.queue.checkpoint")
    /// This checkpointer's key in ``registry``, which the log hook carries.
    private let key: Int

    init(path: String) {
        self.path = path
        key = Self.registry.withLock { registry in
            registry.next += 1
            return registry.next
        }
        Self.registry.withLock { $0.live[key] = Weak(self) }
    }

    deinit {
        let key = self.key
        Self.registry.withLock { _ = $0.live.removeValue(forKey: key) }
    }

    /// Checkpoints run here so far, and those that failed.
    var counts: (completed: Int, failed: Int) { state.withLock { ($0.completed, $0.failed) } }

    /// Replaces SQLite's automatic checkpoint on `db` (the writer) by this one's log hook.
    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, logHook, UnsafeMutableRawPointer(bitPattern: key))
    }

    /// Asks for a checkpoint, unless one is under way.
    fileprivate func request() {
        let first = state.withLock { state -> Bool in
            guard !state.scheduled, !state.closed else { return false }
            state.scheduled = true
            return true
        }
        guard first else { return }
        queue.async { self.checkpoint() }
    }

    /// A `PASSIVE` checkpoint on this checkpointer's connection (opened at the first one).
    private func checkpoint() {
        guard let connection = openConnection() else { return }
        let done: Bool
        do {
            _ = try connection.inDatabase { try $0.checkpoint(.passive) }
            done = true
        } catch {
            done = false
        }
        state.withLock { state in
            state.scheduled = false
            if done { state.completed += 1 } else { state.failed += 1 }
        }
    }

    private func openConnection() -> DatabaseQueue? {
        if let open = state.withLock({ $0.closed ? nil : $0.connection }) { return open }
        var configuration = Configuration()
        configuration.label = "courier.queue.checkpoint"
        let opened = try? DatabaseQueue(path: path, configuration: configuration)
        return state.withLock { state -> DatabaseQueue? in
            if state.closed || opened == nil {
                state.scheduled = false
                if opened == nil { state.failed += 1 }
                return nil
            }
            state.connection = opened
            return opened
        }
    }

    /// Waits for a checkpoint under way, then closes the connection; none runs afterwards. The
    /// writer is the file's last connection, which removes the log when it closes.
    func close() async {
        let connection = state.withLock { state -> DatabaseQueue? in
            state.closed = true
            defer { state.connection = nil }
            return state.connection
        }
        // Closed on this checkpointer's thread, after the work queued there: the close waits
        // for a checkpoint under way, which may be in an `fsync`.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                try? connection?.close()
                continuation.resume()
            }
        }
    }

    // MARK: - The log hook's way back

    private struct Weak {
        weak var checkpointer: Checkpointer?
        init(_ checkpointer: Checkpointer) { self.checkpointer = checkpointer }
    }

    /// Live checkpointers by key: the hook, a C function, carries a key, not a reference, so a
    /// commit after its checkpointer is gone finds nothing and checkpoints by itself.
    private static let registry = LockedBox<(next: Int, live: [Int: Weak])>((0, [:]))

    fileprivate static func find(_ key: Int) -> Checkpointer? {
        registry.withLock { $0.live[key]?.checkpointer }
    }
}

/// The writer's log hook: called after each commit with the pages in the log.
private func logHook(_ context: UnsafeMutableRawPointer?, _ db: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ pages: Int32) -> Int32 {
    guard pages >= Checkpointer.threshold else { return SQLITE_OK }
    if pages < Checkpointer.limit, let checkpointer = Checkpointer.find(Int(bitPattern: context)) {
        checkpointer.request()
    } else {
        // What SQLite's automatic checkpoint does: as much as it can, without waiting.
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }
    return SQLITE_OK
}
