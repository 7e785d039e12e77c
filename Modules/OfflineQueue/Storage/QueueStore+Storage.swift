import Foundation
import GRDB
import HTTPCore

/// The parts of ``QueueStorage`` that are about the file's surroundings rather than its rows:
/// the owner's lock file and the body folder.
extension QueueStore {
    var location: String { path }
    /// `host:pid:token:boot`, held by ``ownerLock``.
    var owner: String { ownerLock.owner }

    func acquireOwnership() async throws(QueueError) { try ownerLock.acquire() }

    /// SQLite cannot tell this process about another's commit: a service polls.
    func observeRemoteEnqueues(_ wake: @escaping @Sendable () -> Void) {}

    /// The file closes with the last reference to the store.
    /// Waits for the work already handed to the writer: a group commit's block runs on for a
    /// moment after its callers resumed, holding the file open, and a process that ended in
    /// that moment (a `sync` command) left the `-wal` and `-shm` files behind instead of the
    /// last connection's close removing them.
    func shutDown() async {
        // The checkpointer's connection first: the writer, closing last, removes the log.
        await checkpointer?.close()
        if !readOnly { _ = try? await pool.writeWithoutTransaction { _ in } }
    }

    func storeBody(_ stream: ByteStream) async throws(QueueError) -> StoredBody {
        if readOnly { throw Self.readOnlyRefusal(path) }
        let (name, length) = try await bodies.write(stream)
        return .file(name: name, length: length)
    }

    func discardBodies(_ stored: [StoredBody]) async {
        bodies.remove(stored.compactMap { if case .file(let name, _) = $0 { name } else { nil } })
    }

    func replayBody(_ body: StoredBody) throws(QueueError) -> RequestBody {
        switch body {
        case .inline(let data):
            return .data(data)
        case .file(let name, _):
            let url = try bodies.url(for: name)
            do {
                return try RequestBody.file(url)
            } catch {
                throw .io(path: url.path, reason: "cannot read the stored body: \(error)")
            }
        }
    }

    func sweepOrphanBodies() async throws(QueueError) {
        bodies.sweepOrphans(keeping: try await referencedBodyFiles())
    }
}
