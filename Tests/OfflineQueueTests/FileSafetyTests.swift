import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The files a queue owns: the application_id that marks them, opening for reading only, and
/// a body folder that names from rows, links or other users cannot lead outside of.
@Suite("Files: application_id, read-only opening, the body folder", .serialized)
struct FileSafetyTests {
    /// `CRIQ`, as `Docs/OfflineQueue.md` documents it.
    static let applicationID: Int32 = 0x4352_4951

    /// `application_id` and `user_version` of `path`, read without changing it.
    func header(_ path: String) async throws -> (application: Int32, version: Int) {
        var configuration = Configuration()
        configuration.readonly = true
        return try await DatabaseQueue(path: path, configuration: configuration).read { db in
            (try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0, try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0)
        }
    }

    /// Runs raw SQL on `path` beside (or after) the queue, as another program could.
    func execute(_ path: String, _ sql: String, _ arguments: StatementArguments = []) async throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        try await DatabaseQueue(path: path, configuration: configuration).write { try $0.execute(sql: sql, arguments: arguments) }
    }

    func listing(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    func age(_ path: String) throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: path)
    }

    func isCannotCreate(_ error: any Error, containing text: String) -> Bool {
        guard let error = error as? QueueError, error.kind == .cannotCreate, let reason = error.reason else { return false }
        return reason.contains(text)
    }

    func isReadOnly(_ error: any Error) -> Bool {
        guard let error = error as? QueueError, error.kind == .readOnly else { return false }
        return error.description.contains("the queue was opened read-only")
    }

    // MARK: - application_id

    @Test("a new file carries Courier's application_id and schema 3")
    func stamped() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        _ = try makeQueue(path: folder.databasePath, server: server)
        let header = try await header(folder.databasePath)
        #expect(header.application == Self.applicationID)
        #expect(header.version == 18)
        await server.shutdown()
    }

    @Test("a file of an older Courier (application_id 0, schema 2) is stamped at opening and keeps its rows")
    func olderFileStamped() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        do {
            let queue = try makeQueue(path: folder.databasePath, server: server)
            _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        }
        // What Courier wrote before the id: schema 2, no application_id, no dead_reason.
        try await execute(folder.databasePath, backToSchema8 + """
            PRAGMA application_id = 0; PRAGMA user_version = 2;
            DROP VIEW entry_view; DROP TABLE lease; ALTER TABLE entry DROP COLUMN dead_reason; DROP TABLE pause;
            CREATE INDEX entry_lease ON entry(lease_owner, lease_uptime) WHERE state = 'inflight';
            DELETE FROM grdb_migrations WHERE identifier IN ('v3-application-id', 'v4-dead-reason', 'v5-pauses', 'v6-leases', 'v7-due-in-view')
            """)
        let older = try await header(folder.databasePath)
        #expect(older.application == 0 && older.version == 2)
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let stamped = try await header(folder.databasePath)
        #expect(stamped.application == Self.applicationID && stamped.version == 18)
        #expect(try await queue.counts().pending == 1)
        await server.shutdown()
    }

    @Test("a claim of schema 5 moves to the lease table: read as it is, then shown in flight under its owner, taken back from that drainer once it is gone, and delivered")
    func schemaFiveClaimMigrates() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let id: EntryID
        do {
            let queue = try makeQueue(path: folder.databasePath, server: server)
            id = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString).id
        }
        // What schema 5 wrote for an entry in flight: the claim in the entry's own columns,
        // here under a drainer of an earlier boot.
        let owner = "host:1:0123456789abcdef:an-earlier-boot"
        try await execute(folder.databasePath, backToSchema8 + """
            DROP VIEW entry_view; DROP TABLE lease;
            CREATE INDEX entry_lease ON entry(lease_owner, lease_uptime) WHERE state = 'inflight';
            UPDATE entry SET state = 'inflight', lease_owner = '\(owner)', lease_uptime = 1, lease_expires_at = 1, last_attempt_at = 1, attempt_uptime = 1;
            DELETE FROM grdb_migrations WHERE identifier IN ('v6-leases', 'v7-due-in-view');
            PRAGMA user_version = 5
            """)
        let reader = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = true }
        #expect(try await reader.entry(id)?.state == .inflight, "a read-only queue reads schema 5 as it is")
        #expect(try await reader.counts().inflight == 1)
        let queue = try makeQueue(path: folder.databasePath, server: server)
        #expect(try await header(folder.databasePath).version == 18)
        let moved = try #require(try await queue.entry(id))
        #expect(moved.state == .inflight && moved.leaseOwner == owner)
        let counts = try await queue.counts()
        #expect(counts.inflight == 1 && counts.pending == 0 && counts.inflightOrphaned == 1)
        #expect(try await queue.entries(EntryFilter(states: [.inflight])).map(\.id) == [id], "listed by its shown state")
        #expect(try await queue.entries(EntryFilter(states: [.pending])).isEmpty, "not by its stored one")
        let summary = try await queue.drain()
        #expect(summary.delivered == 1)
        let delivered = try #require(try await queue.entry(id))
        #expect(delivered.state == .delivered && delivered.leaseOwner == nil)
        #expect(delivered.lastError == nil)
        await server.shutdown()
    }

    @Test("entries in flight are listed from the leases: in id order, after an id, up to a limit, never a pending one")
    func inflightListing() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        var ids: [EntryID] = []
        for _ in 0..<6 { ids.append(try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString).id) }
        // Two claims of another drainer, the later entry's lease written first.
        try await execute(folder.databasePath, """
            INSERT INTO lease (entry_id, owner, boot, until_uptime, until_wall, attempt_wall, attempt_uptime)
            VALUES (\(ids[4]), 'host:1:0123456789abcdef:other', 'b', 1e12, 1e12, 1, 1),
                   (\(ids[1]), 'host:1:0123456789abcdef:other', 'b', 1e12, 1e12, 1, 1)
            """)
        #expect(try await queue.entries(EntryFilter(states: [.inflight])).map(\.id) == [ids[1], ids[4]])
        #expect(try await queue.entries(EntryFilter(states: [.inflight], after: ids[1])).map(\.id) == [ids[4]])
        #expect(try await queue.entries(EntryFilter(states: [.inflight], limit: 1)).map(\.id) == [ids[1]])
        #expect(try await queue.entries(EntryFilter(states: [.pending])).map(\.id) == [ids[0], ids[2], ids[3], ids[5]])
        #expect(try await queue.entries(EntryFilter(states: [.pending, .inflight])).map(\.id) == ids)
        await server.shutdown()
    }

    @Test("a schema 3 file, whose dead rows keep their reason as the prefix of last_error, reads the reason as it is and splits it when migrated")
    func deadReasonMigration() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let id: EntryID
        do {
            let queue = try makeQueue(path: folder.databasePath, server: server)
            id = try await queue.enqueue(method: "POST", url: server.url("/status/410").absoluteString).id
            _ = try await queue.drain()
            let dead = try #require(try await queue.entry(id))
            #expect(dead.deadReason == .rejected && dead.lastError == "HTTP 410")
        }
        // What schema 3 wrote: the reason in front of the error, no column for it.
        try await execute(folder.databasePath, backToSchema8 + """
            UPDATE entry SET last_error = dead_reason || ': ' || last_error;
            DROP VIEW entry_view; DROP TABLE lease; ALTER TABLE entry DROP COLUMN dead_reason; DROP TABLE pause;
            CREATE INDEX entry_lease ON entry(lease_owner, lease_uptime) WHERE state = 'inflight';
            DROP TRIGGER entry_id_floor; DROP TABLE queue_meta;
            DELETE FROM grdb_migrations WHERE identifier IN ('v4-dead-reason', 'v5-pauses', 'v6-leases', 'v7-due-in-view', 'v8-lean-insert');
            PRAGMA user_version = 3
            """)
        let reader = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = true }
        let read = try #require(try await reader.entry(id))
        #expect(read.deadReason == .rejected, "read from the prefix, without migrating")
        #expect(try await reader.counts().dead == 1, "counts read a file that has no pause table yet")
        #expect(try await reader.pauses().pauses.isEmpty)
        #expect(try await header(folder.databasePath).version == 3, "a read-only queue migrates nothing")
        let migrated = try makeQueue(path: folder.databasePath, server: server)
        let entry = try #require(try await migrated.entry(id))
        #expect(entry.deadReason == .rejected)
        #expect(entry.lastError == "HTTP 410")
        #expect(try await header(folder.databasePath).version == 18)
        await server.shutdown()
    }

    @Test("a file carrying another application's id is refused and left byte for byte, even with Courier's tables")
    func otherApplicationID() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        try await execute(folder.databasePath, "PRAGMA application_id = 305419896; CREATE TABLE entry (x)")
        expectRefused(folder.databasePath, server: server) { $0.contains("0x12345678") }
        await server.shutdown()
    }

    // MARK: - Read-only

    @Test("a read-only queue reads, refuses every write with a clear error, and changes nothing")
    func readOnly() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let url = server.url("/echo").absoluteString
        do {
            let writer = try makeQueue(path: folder.databasePath, server: server) { $0.inlineBodyLimit = 16 }
            _ = try await writer.enqueue(method: "POST", url: url, body: .data(Data(repeating: 1, count: 100)))
            _ = try await writer.enqueue(method: "POST", url: url)
            // Its checkpointer stops first, so no checkpoint of the writer's lands after `before`.
            await writer.close()
        }
        let bodies = folder.databasePath + ".bodies"
        #expect(listing(bodies).count == 1)
        // An orphan a writing queue's sweep would remove.
        let orphan = bodies + "/" + UUID().uuidString.lowercased()
        try Data("x".utf8).write(to: URL(fileURLWithPath: orphan))
        try age(orphan)
        let before = FileManager.default.contents(atPath: folder.databasePath)
        let bodiesBefore = listing(bodies)

        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = true }
        #expect(try await queue.entries().count == 2)
        #expect(try await queue.counts().pending == 2)
        #expect(try await queue.entry(1)?.body?.length == 100)

        await #expect { _ = try await queue.enqueue(method: "POST", url: url) } throws: { isReadOnly($0) }
        await #expect { _ = try await queue.enqueue(method: "POST", url: url, body: .data(Data(repeating: 2, count: 100))) } throws: {
            isReadOnly($0)
        }
        await #expect { try await queue.retry([1]) } throws: { isReadOnly($0) }
        await #expect { try await queue.purge(.ids([1])) } throws: { isReadOnly($0) }
        await #expect { _ = try await queue.drain() } throws: { isReadOnly($0) }
        try await queue.sweepOrphanBodies()

        #expect(server.requests.isEmpty, "a read-only queue sends nothing")
        #expect(FileManager.default.contents(atPath: folder.databasePath) == before)
        #expect(listing(bodies) == bodiesBefore)
        await server.shutdown()
    }

    @Test("a read-only queue never creates a missing file")
    func readOnlyMissing() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        #expect(throws: QueueError.databaseMissing(path: folder.databasePath)) {
            _ = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = true }
        }
        #expect(listing(folder.url.path).isEmpty)
        await server.shutdown()
    }

    // MARK: - The body folder

    @Test("a body folder that is a symbolic link is refused, and a sweep leaves its target's files alone")
    func symlinkedBodyFolder() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let elsewhere = folder.url.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
        let victims = [UUID().uuidString.lowercased(), "keep.txt"]
        for name in victims {
            try Data("precious".utf8).write(to: URL(fileURLWithPath: elsewhere + "/" + name))
            try age(elsewhere + "/" + name)
        }
        let bodies = folder.databasePath + ".bodies"

        // A queue opened before the link appears, as when it is swapped in under a running one.
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.inlineBodyLimit = 16 }
        try FileManager.default.createSymbolicLink(atPath: bodies, withDestinationPath: elsewhere)
        try await queue.sweepOrphanBodies()
        await #expect {
            _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, body: .data(Data(repeating: 1, count: 100)))
        } throws: { isCannotCreate($0, containing: "symbolic link") }
        #expect(listing(elsewhere) == victims.sorted())

        // Opening refuses it outright, for writing and for reading.
        for readOnly in [false, true] {
            #expect {
                _ = try makeQueue(path: folder.databasePath, server: server) { $0.readOnly = readOnly }
            } throws: { isCannotCreate($0, containing: "symbolic link") }
        }
        #expect(listing(elsewhere) == victims.sorted())
        for name in victims {
            #expect(FileManager.default.contents(atPath: elsewhere + "/" + name) == Data("precious".utf8))
        }
        await server.shutdown()
    }

    @Test("a body folder other users may enter is refused; 0700 is accepted")
    func openBodyFolder() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let bodies = folder.databasePath + ".bodies"
        try FileManager.default.createDirectory(atPath: bodies, withIntermediateDirectories: false)
        chmod(bodies, 0o755)
        #expect {
            _ = try makeQueue(path: folder.databasePath, server: server)
        } throws: { isCannotCreate($0, containing: "mode 755") }
        chmod(bodies, 0o700)
        _ = try makeQueue(path: folder.databasePath, server: server)
        await server.shutdown()
    }

    @Test("a new body folder is created 0700")
    func bodyFolderMode() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.inlineBodyLimit = 16 }
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, body: .data(Data(repeating: 1, count: 100)))
        let mode = try FileManager.default.attributesOfItem(atPath: folder.databasePath + ".bodies")[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o700)
        await server.shutdown()
    }

    @Test("rows naming ../queue.db or a path outside: purge and replay neither read nor unlink them")
    func bodyNamesFromRows() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let url = server.url("/echo").absoluteString
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.inlineBodyLimit = 16 }
        let good = try await queue.enqueue(method: "POST", url: url, body: .data(Data(repeating: 1, count: 100)))
        let victim = folder.url.appendingPathComponent("victim").path
        try Data("not a body".utf8).write(to: URL(fileURLWithPath: victim))
        let names = ["../queue.db", "../victim", victim, "./" + UUID().uuidString.lowercased(), UUID().uuidString]
        var ids: [EntryID] = []
        for _ in names { ids.append(try await queue.enqueue(method: "POST", url: server.url("/bad").absoluteString).id) }
        for (id, name) in zip(ids, names) {
            try await execute(folder.databasePath, "UPDATE entry SET body = NULL, body_file = ?, body_length = 10 WHERE id = ?", [name, id])
        }

        // Replay: each bad row fails as invalid, before anything is opened or sent.
        try await drainUntilSettled(queue)
        #expect(try await queue.entry(good.id)?.state == .delivered)
        for id in ids {
            let entry = try #require(try await queue.entry(id))
            #expect(entry.state == .dead)
            #expect(entry.lastError?.contains("not a name Courier writes") == true)
        }
        #expect(server.requests.allSatisfy { $0.path != "/bad" })

        // Purge, by id and by state: the rows go, the files they named stay.
        #expect(try await queue.purge(.ids(Array(ids.prefix(2)))) == 2)
        #expect(try await queue.purge(.states([.dead], finishedBefore: nil)) == ids.count - 2)
        #expect(FileManager.default.contents(atPath: victim) == Data("not a body".utf8))
        #expect(FileManager.default.fileExists(atPath: folder.databasePath))
        #expect(try await queue.integrityCheck() == ["ok"])
        #expect(try await queue.counts().total == 1)
        await server.shutdown()
    }

    @Test("the orphan sweep removes Courier's orphans only: not others' files, links, folders or referenced bodies")
    func sweepTouchesOnlyCourierFiles() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.inlineBodyLimit = 16 }
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, body: .data(Data(repeating: 1, count: 100)))
        let bodies = folder.databasePath + ".bodies"
        let referenced = try #require(listing(bodies).first)
        try age(bodies + "/" + referenced)

        let outside = folder.url.appendingPathComponent("outside").path
        try Data("outside".utf8).write(to: URL(fileURLWithPath: outside))
        let orphan = UUID().uuidString.lowercased()
        let upper = UUID().uuidString
        let link = UUID().uuidString.lowercased()
        let subfolder = UUID().uuidString.lowercased()
        for name in [orphan, upper, "notes.txt"] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: bodies + "/" + name))
            try age(bodies + "/" + name)
        }
        try FileManager.default.createSymbolicLink(atPath: bodies + "/" + link, withDestinationPath: outside)
        try age(outside)
        try FileManager.default.createDirectory(atPath: bodies + "/" + subfolder, withIntermediateDirectories: false)
        try age(bodies + "/" + subfolder)

        try await queue.sweepOrphanBodies()
        #expect(listing(bodies) == [referenced, upper, link, subfolder, "notes.txt"].sorted())
        #expect(FileManager.default.contents(atPath: outside) == Data("outside".utf8))
        await server.shutdown()
    }
}
