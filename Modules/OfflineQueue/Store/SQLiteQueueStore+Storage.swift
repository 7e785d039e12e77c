import Foundation
import GRDB
import HTTPCore

/// The parts of ``QueueStorage`` that are about the file's surroundings rather than its rows:
/// the owner's lock file, the wake file and the body folder.
extension SQLiteQueueStore {
    var location: String { path }
    /// `host:pid:token:boot`, held by ``ownerLock``.
    var owner: String { ownerLock.owner }

    /// Takes the owner's lock, and starts watching the wake file (``WakeFile``) when a wake
    /// is registered: only drainers watch.
    func takeOwnership() async throws(QueueError) {
        try ownerLock.acquire()
        if let wake = remoteWake.current { wakeFile.watch(wake) }
    }

    /// Another process's enqueue rings ``wakeFile``; this process hears it once it drains.
    func watchRemoteEnqueues(_ wake: @escaping @Sendable () -> Void) {
        remoteWake.withLock { $0 = wake }
    }

    /// Tells every drainer of the file that entries became due, after the commit that made
    /// them so.
    func ringWake() {
        if !readOnly { wakeFile.ring() }
    }

    /// The file closes with the last reference to the store.
    /// Waits for the work already handed to the writer: a group commit's block runs on for a
    /// moment after its callers resumed, holding the file open, and a process that ended in
    /// that moment (a `sync` command) would leave the `-wal` and `-shm` files behind instead of
    /// the last connection's close removing them.
    func shutDown() async {
        wakeFile.stop()
        settledFile.stop()
        // The checkpointer's connection first: the writer, closing last, removes the log.
        await checkpointer?.close()
        if !readOnly { _ = try? await pool.writeWithoutTransaction { _ in } }
        // The hold dies with the store, as with its process: what it still holds (nothing,
        // after a drain that ended) is another drainer's to take back at once.
        ownerLock.release()
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

    func sweepBodies() async throws(QueueError) {
        bodies.sweepOrphans(keeping: try await referencedBodyFiles())
    }
}
