import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Damaged, foreign, newer, unwritable and full storage: a clear error, nothing lost, nothing
/// half-written.
@Suite("Bad storage: corrupt, foreign, newer, read-only, full", .serialized)
struct BadInputTests {
    func open(_ path: String, server: TestHTTPServer, create: Bool = true) throws -> OfflineQueue {
        try makeQueue(path: path, server: server) { $0.createIfMissing = create }
    }

    @Test("a corrupt file is refused with a clear error and left untouched")
    func corrupt() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        var generator = SeededGenerator(seed: 7)
        let garbage = Data((0..<16_384).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try garbage.write(to: URL(fileURLWithPath: folder.databasePath))
        #expect {
            _ = try open(folder.databasePath, server: server)
        } throws: { error in
            guard let error = error as? QueueError, error.kind == .corruptDatabase else { return false }
            return error.path == folder.databasePath
        }
        #expect(FileManager.default.contents(atPath: folder.databasePath) == garbage)
        let walSize = (try? FileManager.default.attributesOfItem(atPath: folder.databasePath + "-wal"))?[.size] as? NSNumber
        #expect(walSize == nil || walSize == 0, "no journal written next to it")

        // A real queue file with a damaged page: the first read that meets it fails clearly.
        let damaged = folder.url.appendingPathComponent("damaged.db").path
        do {
            let queue = try open(damaged, server: server)
            let requests = (0..<500).map { QueuedRequest(method: "POST", url: "http://127.0.0.1:1/x/\($0)", body: .data(Data(repeating: 1, count: 900))) }
            _ = try await queue.enqueue(requests)
            // Closed, so the log is checkpointed into the file and gone before the damage: a
            // page still in the log would be read from there, over the damage.
            await queue.close()
        }
        #expect(!FileManager.default.fileExists(atPath: damaged + "-wal"), "the file holds every page")
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: damaged))
        try handle.seek(toOffset: 4096 * 3)
        handle.write(Data(repeating: 0xFF, count: 4096 * 4))
        try handle.close()
        let reopened = Result { try open(damaged, server: server) }
        switch reopened {
        case .failure(let error):
            #expect(error is QueueError)
        case .success(let queue):
            await #expect(throws: QueueError.self) {
                _ = try await queue.entries(EntryFilter(limit: 1000))
                let check = try await queue.integrityCheck()
                if check != ["ok"] { throw QueueError.corruptDatabase(path: damaged, reason: check.joined()) }
            }
        }
        await server.shutdown()
    }

    @Test("a SQLite file of another application is refused, not migrated")
    func foreign() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        try await DatabaseQueue(path: folder.databasePath).write { db in
            try db.execute(sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')")
        }
        let before = FileManager.default.contents(atPath: folder.databasePath)
        #expect {
            _ = try open(folder.databasePath, server: server)
        } throws: { error in
            guard let error = error as? QueueError, error.kind == .corruptDatabase, let reason = error.reason else { return false }
            return reason.contains("users")
        }
        #expect(FileManager.default.contents(atPath: folder.databasePath) == before)
        await server.shutdown()
    }

    @Test("a foreign SQLite database with its own tables and user_version 7 (or 1) is refused and left byte for byte, still in its journal mode", arguments: [7, 1])
    func foreignWithVersion(version: Int) async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        // Own tables, a user_version, a rollback journal: once taken for a newer (7) or an
        // older (1) Courier file, and switched to WAL before any check.
        try await DatabaseQueue(path: folder.databasePath).write { db in
            try db.execute(sql: """
                CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');
                PRAGMA user_version = \(version)
                """)
        }
        let before = try #require(FileManager.default.contents(atPath: folder.databasePath))
        #expect(before[18] == 1 && before[19] == 1, "a rollback-journal file to begin with")
        for readOnly in [false, true] {
            #expect {
                _ = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = readOnly }
            } throws: { error in
                guard let error = error as? QueueError, error.kind == .corruptDatabase, let reason = error.reason else { return false }
                return error.path == folder.databasePath && reason.contains("users")
            }
        }
        #expect(FileManager.default.contents(atPath: folder.databasePath) == before, "not a byte changed, the journal mode neither")
        #expect(!FileManager.default.fileExists(atPath: folder.databasePath + "-wal"))
        await server.shutdown()
    }

    @Test("a file of Courier's tables that records migrations past schema 2 but carries no application_id is refused, not stamped")
    func unstampedPastSchemaTwo() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        _ = try open(folder.databasePath, server: server)
        // A rollback journal, so that a log beside it would be one the opening made.
        try await DatabaseQueue(path: folder.databasePath).writeWithoutTransaction {
            try $0.execute(sql: "PRAGMA journal_mode = DELETE; PRAGMA application_id = 0")
        }
        expectRefused(folder.databasePath, server: server) { $0.hasPrefix("schema version 18 without Courier's application_id") }
        await server.shutdown()
    }

    @Test("a file from a newer schema (a migration this version does not know) is refused, read-only too, and keeps its record")
    func newerSchema() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        do {
            let queue = try open(folder.databasePath, server: server)
            _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        }
        try await DatabaseQueue(path: folder.databasePath).write {
            try $0.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v19-from-the-future')")
        }
        let before = FileManager.default.contents(atPath: folder.databasePath)
        for readOnly in [false, true] {
            #expect(throws: QueueError.newerSchema(path: folder.databasePath, found: 19, supported: 18)) {
                _ = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = readOnly }
            }
        }
        #expect(FileManager.default.contents(atPath: folder.databasePath) == before, "not a byte changed")
        let record = try await DatabaseQueue(path: folder.databasePath).read { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations") }
        #expect(record.count == 19 && record.contains("v19-from-the-future"))
        let rows = try await DatabaseQueue(path: folder.databasePath).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM entry") }
        #expect(rows == 1, "the newer file's rows are untouched")
        await server.shutdown()
    }

    @Test("a missing file is created only when asked")
    func missing() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        #expect(throws: QueueError.databaseMissing(path: folder.databasePath)) {
            _ = try open(folder.databasePath, server: server, create: false)
        }
        #expect(!FileManager.default.fileExists(atPath: folder.databasePath))
        await server.shutdown()
    }

    @Test("a read-only folder gives a clear cannot-create error")
    func readOnlyFolder() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let mountPoint = folder.url.appendingPathComponent("ro").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let tmpfs = try Tmpfs(at: mountPoint, size: "1m", readOnly: true)
        defer { tmpfs.unmount() }
        let server = try await TestHTTPServer.start()
        let path = mountPoint + "/queue.db"
        #expect {
            _ = try open(path, server: server)
        } throws: { error in
            guard let error = error as? QueueError, error.kind == .cannotCreate, let reason = error.reason else { return false }
            return error.path == path && reason.lowercased().contains("read-only")
        }
        await server.shutdown()
    }

    @Test("a full disk: the enqueue throws, leaves no row or body file, and works again once space is freed")
    func fullDisk() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let mountPoint = folder.url.appendingPathComponent("small").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let tmpfs = try Tmpfs(at: mountPoint, size: "2m")
        defer { tmpfs.unmount() }
        let server = try await TestHTTPServer.start()
        let path = mountPoint + "/queue.db"
        let queue = try makeQueue(path: path, server: server) { $0.inlineBodyLimit = 16 * 1024 }
        let url = server.url("/upload").absoluteString
        let first = try await queue.enqueue(method: "POST", url: url, body: .data(Data(repeating: 7, count: 1000)))

        // Fill what is left with a file of our own.
        let filler = mountPoint + "/filler"
        _ = FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: filler))
        let block = Data(repeating: 0, count: 4096)
        while (try? handle.write(contentsOf: block)) != nil {}
        try? handle.close()

        for size in [8 * 1024, 200 * 1024] {   // inline, then a body file
            await #expect {
                try await queue.enqueue(method: "POST", url: url, body: .data(Data(repeating: 9, count: size)))
            } throws: { error in
                (error as? QueueError)?.kind == .diskFull
            }
        }
        let counts = try await queue.counts()
        #expect(counts.total == 1, "no partial row")
        let bodies = (try? FileManager.default.contentsOfDirectory(atPath: path + ".bodies")) ?? []
        #expect(bodies.isEmpty, "no partial body file")

        try FileManager.default.removeItem(atPath: filler)
        let second = try await queue.enqueue(method: "POST", url: url, body: .data(Data(repeating: 9, count: 200 * 1024)))
        try await drainUntilSettled(queue)
        #expect(try await queue.entry(first.id)?.state == .delivered)
        #expect(try await queue.entry(second.id)?.state == .delivered)
        #expect(try await queue.integrityCheck() == ["ok"])
        await server.shutdown()
    }
}
