import Foundation
import GRDB
import HTTPCore
@testable import OfflineQueue
@testable import OfflineQueueCore
import QueueTestSupport
import Testing
import TestSupport

/// The write-ahead log is copied into the file by a checkpointer of the queue's own, beside the
/// writer, not inside the writer's commits; what the queue stored is all there afterwards.
@Suite("Checkpoints: off the writer, bounded, nothing lost")
struct CheckpointTests {
    /// Enqueues `batches` transactions of 100 entries of 2 KiB: about 60 log pages each.
    static func fill(_ queue: OfflineQueue, batches: Int) async throws {
        for batch in 0..<batches {
            _ = try await queue.enqueue((0..<100).map { index in
                QueuedRequest(method: "POST", url: "http://127.0.0.1:9/events/\(batch)/\(index)", body: .data(Data(repeating: UInt8(index), count: 2_048)))
            })
        }
    }

    static func checkpointer(of queue: OfflineQueue) throws -> Checkpointer {
        try #require((queue.store as? SQLiteQueueStore)?.checkpointer)
    }

    @Test("past 1,000 log pages a checkpoint runs on its own connection; every entry is there, in the file, after the close")
    func offTheWriter() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        do {
            let queue = try makeQueue(path: folder.databasePath, server: server)
            let checkpointer = try Self.checkpointer(of: queue)
            try await Self.fill(queue, batches: 40)
            // The checkpointer runs on its own thread: wait for it.
            #expect(await eventually { checkpointer.counts.completed >= 1 }, "a checkpoint ran")
            #expect(checkpointer.counts.failed == 0)
            #expect(try await queue.counts().pending == 4_000)
            await queue.close()
        }
        // Closed: the file alone holds every entry (read it without the log).
        #expect(await eventually { !FileManager.default.fileExists(atPath: folder.databasePath + "-wal") }, "the last connection removed the log")
        var configuration = Configuration()
        configuration.readonly = true
        let reader = try DatabaseQueue(path: folder.databasePath, configuration: configuration)
        #expect(try await reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM entry") } == 4_000)
        try reader.close()
        await server.shutdown()
    }

    @Test("with the checkpointer gone, the writer checkpoints by itself past the limit: the log stays bounded")
    func withoutCheckpointer() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let store = try #require(queue.store as? SQLiteQueueStore)
        // A hook whose checkpointer is gone (its key finds nothing): the writer's commits fall
        // back to checkpointing themselves, as SQLite's automatic checkpoint does, but only past
        // the limit.
        try await store.pool.writeWithoutTransaction { db in Checkpointer(path: folder.databasePath).install(on: db) }
        try await Self.fill(queue, batches: 120)   // about 7,000 pages written
        let log = try #require(FileManager.default.attributesOfItem(atPath: folder.databasePath + "-wal")[.size] as? NSNumber)
        let pageSize = try await store.pool.read { try Int.fetchOne($0, sql: "PRAGMA page_size") } ?? 4_096
        #expect(log.intValue > 1_000 * pageSize, "no checkpoint before the limit")
        #expect(log.intValue < Int(Checkpointer.limit + 1_000) * pageSize, "the log restarted after the writer's own checkpoint")
        #expect(try await queue.counts().pending == 12_000)
        await queue.close()
        await server.shutdown()
    }
}
