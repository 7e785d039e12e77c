import Foundation
import GRDB
import HTTPCore
@testable import OfflineQueue
@testable import OfflineQueueCore
import QueueTestSupport
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The space a drain keeps aside to record what it sent when the disk fills: the file, and
/// what recording on a full disk needs of it.
@Suite("DiskReserve: the space kept to record sends on a full disk", .serialized)
struct DiskReserveTests {
    static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    @Test("a writer's opening makes a 0600 file of the reserve's size with its blocks taken; a short one is made whole; release gives it back")
    func file() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let reserve = DiskReserve(databasePath: folder.databasePath, inlineBodyLimit: 64 * 1024)
        #expect(reserve.size == 320 * 1024)
        #expect(DiskReserve.size(inlineBodyLimit: 0) == 128 * 1024, "bodies all in files: rows of a few pages")
        var info = stat()
        try #require(stat(reserve.path, &info) == 0)
        #expect(Int(info.st_size) == reserve.size && Int(info.st_blocks) * 512 >= reserve.size)
        #expect(info.st_mode & 0o777 == 0o600)

        // What a crash while it was made leaves: made whole by the next drain's start.
        try #require(truncate(reserve.path, 4096) == 0)
        _ = try await queue.store.prepareDrain(DrainPreparation(), now: QueueClock.system.now())
        #expect(Self.fileSize(reserve.path) == reserve.size)
        #expect(reserve.release())
        #expect(!reserve.release() && Self.fileSize(reserve.path) == 0)
        _ = try await queue.store.prepareDrain(DrainPreparation(), now: QueueClock.system.now())
        #expect(Self.fileSize(reserve.path) == reserve.size)
        await queue.close()
        await server.shutdown()
    }

    @Test("on a full disk the reserve cannot be made: diskFull, and no partial file left to take space")
    func fullDisk() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let tmpfs = try Tmpfs(under: folder.url, size: "1m")
        defer { tmpfs.unmount() }
        // Room for a quarter of the reserve only.
        let filler = tmpfs.path + "/filler"
        try Data(count: 1024 * 1024 - 80 * 1024).write(to: URL(fileURLWithPath: filler))
        let reserve = DiskReserve(databasePath: tmpfs.path + "/queue.db", inlineBodyLimit: 64 * 1024)
        #expect(throws: QueueError.diskFull(path: reserve.path)) { try reserve.hold() }
        #expect(!FileManager.default.fileExists(atPath: reserve.path))
        try FileManager.default.removeItem(atPath: filler)
        #expect(try reserve.hold())
        #expect(Self.fileSize(reserve.path) == reserve.size)
    }

    @Test("recording on a full disk needs one settlement's space however many it records; the reserve holds that for the largest inline row", arguments: [200, 16 * 1024, 64 * 1024])
    func recordingNeeds(bodySize: Int) async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let path = folder.databasePath
        let queue = try makeQueue(path: path, server: server) { $0.durability = .full }
        let store = try #require(queue.store as? SQLiteQueueStore)
        let url = server.url("/events").absoluteString
        for _ in 0..<32 { _ = try await queue.enqueue(method: "POST", url: url, body: .data(Data(repeating: 7, count: bodySize))) }
        try await store.takeOwnership()
        let now = queue.configuration.clock.now()
        let claimed = try await store.settleAndClaim([], now: now, claimLimit: 32, lease: .seconds(300), attemptedSince: nil).claimed
        try #require(claimed.count == 32)
        let delivered = claimed.map { Settlement(id: $0.id, transition: .deliver(status: 200)) }

        /// The log's bytes and the file's growth for `record`, from an empty log.
        func measure(_ record: () async throws -> Void) async throws -> (log: Int, growth: Int) {
            try await store.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            let before = Self.fileSize(path)
            try await record()
            let log = Self.fileSize(path + "-wal")
            try await store.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            return (log, Self.fileSize(path) - before)
        }
        // On a full disk first, so that its count holds the file's growth for a first new chain.
        let onFullDisk = try await measure { _ = try await store.settleOnFullDisk(Array(delivered[0..<15]), now: now) }
        let one = try await measure { _ = try await store.settle(Array(delivered[15..<16]), now: now) }
        let sixteen = try await measure { _ = try await store.settle(Array(delivered[16..<32]), now: now) }
        print("""
            settle of a row with a \(bodySize)-byte body: one \(one.log) log bytes + \(one.growth) file growth; \
            16 in one transaction \(sixteen.log) + \(sixteen.growth); 15 on a full disk \(onFullDisk.log) + \(onFullDisk.growth); \
            reserve \(store.reserve.size)
            """)
        #expect(onFullDisk.log + onFullDisk.growth <= store.reserve.size, "recording on a full disk fits in the reserve")
        // The log starts over between settlements: about one's, the first one's few more pages aside.
        #expect(onFullDisk.log <= one.log + 8 * 4120, "15 settlements take the log one takes")
        #expect(try await queue.counts().delivered == 32)
        await queue.close()
        await server.shutdown()
    }
}
