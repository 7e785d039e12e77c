import Foundation
import GRDB
import HTTPCore
import Logging
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Retention: delivered entries leave after their period with their body files, dead letters
/// and open entries stay, and the file gives its free pages back. Entries are made old by
/// passing a later `now`, never by waiting.
@Suite("Retention: delivered entries deleted, pages given back")
struct RetentionTests {
    static let eightDays: TimeInterval = 8 * 24 * 3600

    @Test("delivered entries past the period go with their body files; dead and pending entries stay", arguments: StoreKind.allCases)
    func deletesDeliveredOnly(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server) { $0.inlineBodyLimit = 1024 }
            let body = Data(repeating: 0x61, count: 4096)   // over the inline limit: a body file each
            var delivered: [Ticket] = []
            for index in 0..<3 {
                delivered.append(try await queue.enqueue(method: "POST", url: server.url("/echo?n=\(index)").absoluteString, body: .data(body)))
            }
            let dead = try await queue.enqueue(method: "POST", url: server.url("/missing").absoluteString, body: .data(body))
            let pending = try await queue.enqueue(
                method: "POST", url: server.url("/echo?later").absoluteString, body: .data(body),
                options: EnqueueOptions(notBefore: Date().addingTimeInterval(3600))
            )
            let summary = try await queue.drain()
            #expect(summary.delivered == 3)
            #expect(summary.dead == 1)
            let bodies = try await bodyNames(of: delivered + [dead, pending], in: queue)
            #expect(bodies.count == 5)
            for name in bodies { #expect(try await store.bodyExists(name)) }

            #expect(try await queue.applyRetention().deletedEntries == 0, "nothing is a week old yet")
            let removed = try await queue.applyRetention(now: Date().addingTimeInterval(Self.eightDays))
            #expect(removed.deletedEntries == 3)
            #expect(removed.deletedBodyFiles == 3)
            for ticket in delivered { #expect(try await queue.entry(ticket.id) == nil) }
            for name in bodies.prefix(3) { #expect(try await !store.bodyExists(name), "a delivered entry's body went with it") }
            #expect(try await queue.entry(dead.id)?.state == .dead, "dead letters stay until purged")
            #expect(try await queue.entry(pending.id)?.state == .pending)
            for name in bodies.suffix(2) { #expect(try await store.bodyExists(name)) }
            let counts = try await queue.counts()
            #expect(counts.delivered == 0 && counts.dead == 1 && counts.pending == 1)
            #expect(try await queue.integrityCheck() == ["ok"])
            await server.shutdown()
        }
    }

    @Test("a nil retention keeps delivered entries however old", arguments: StoreKind.allCases)
    func nilKeepsForever(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server) { $0.deliveredRetention = nil }
            let ticket = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
            #expect(try await queue.drain().delivered == 1)
            #expect(try await queue.applyRetention(now: Date().addingTimeInterval(10 * 365 * 24 * 3600)).deletedEntries == 0)
            #expect(try await queue.entry(ticket.id)?.state == .delivered)
            await server.shutdown()
        }
    }

    @Test("under a steady enqueue and deliver load with retention, the file stops growing")
    func fileStopsGrowing() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        // Inline bodies: the rows themselves carry the weight, so the file is what grows.
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let body = Data(repeating: 0x62, count: 16 * 1024)
        var sizes: [Int] = []
        for round in 0..<6 {
            let requests = (0..<40).map { index in
                QueuedRequest(method: "POST", url: server.url("/echo?r=\(round)&n=\(index)").absoluteString, body: .data(body))
            }
            _ = try await queue.enqueue(requests)
            #expect(try await queue.drain().delivered == 40)
            let loaded = try await checkpointedSize(folder.databasePath)
            let removed = try await queue.applyRetention(now: Date().addingTimeInterval(Self.eightDays))
            #expect(removed.deletedEntries == 40)
            #expect(removed.releasedPages > 0, "the freed pages go back to the file system")
            let size = try await checkpointedSize(folder.databasePath)
            #expect(size < loaded, "round \(round): the file shrinks after retention (\(loaded) → \(size) bytes)")
            sizes.append(size)
        }
        print("retention: file size after each round: \(sizes)")
        let margin = 64 * 1024
        #expect(sizes[5] <= sizes[1] + margin, "the file does not grow round after round: \(sizes)")
        #expect(try await queue.integrityCheck() == ["ok"])
        await server.shutdown()
    }

    @Test("a new file is created with auto_vacuum INCREMENTAL")
    func newFileIsIncremental() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        _ = try makeQueue(path: folder.databasePath, server: server)
        #expect(try await autoVacuum(folder.databasePath) == 2)
        await server.shutdown()
    }

    @Test("a file with auto_vacuum NONE is converted once when opened, its entries kept")
    func oldFileIsConverted() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        var ticket: Ticket?
        do {
            let queue = try makeQueue(path: folder.databasePath, server: server)
            ticket = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, body: .data(Data("kept".utf8)))
        }
        // Turn it into a file as an older Courier wrote it.
        try await DatabaseQueue(path: folder.databasePath).writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = NONE")
            try db.execute(sql: "VACUUM")
        }
        #expect(try await autoVacuum(folder.databasePath) == 0)
        let queue = try makeQueue(path: folder.databasePath, server: server)
        #expect(try await autoVacuum(folder.databasePath) == 2)
        let id = try #require(ticket).id
        let entry = try #require(try await queue.entry(id))
        #expect(entry.state == .pending)
        #expect(try await queue.drain().delivered == 1)
        #expect(server.requests.last?.bodySize == 4)
        #expect(try await queue.integrityCheck() == ["ok"])
        await server.shutdown()
    }

    @Test("the service applies retention when it starts, and its heartbeat beats as its loop goes round")
    func serviceAppliesRetentionAndBeats() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        // A zero period: everything delivered before the service starts is past it.
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.deliveredRetention = .zero }
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        #expect(try await queue.drain().delivered == 1)
        let service = queue.service(pollInterval: .milliseconds(20), logger: Logger(label: "test"))
        let beats = service.heartbeat.beats()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            var seen = 0
            for await _ in beats {
                seen += 1
                if seen == 3 { break }
            }
            #expect(service.heartbeat.count >= 3)
            #expect(try await queue.counts().delivered == 0, "deleted by the pass at start, before the first beat")
            service.shutDown()
            try await group.waitForAll()
        }
        // A stream asked for after the service stopped ends at once instead of waiting forever.
        for await _ in service.heartbeat.beats() { Issue.record("a beat after the service stopped") }
        await server.shutdown()
    }

    // MARK: - Helpers

    /// The names of the bodies `tickets` keep apart from their rows, in the same order.
    private func bodyNames(of tickets: [Ticket], in queue: OfflineQueue) async throws -> [String] {
        var names: [String] = []
        for ticket in tickets {
            let entry = try #require(try await queue.entry(ticket.id))
            guard case .file(let name, _) = entry.body else { continue }
            names.append(name)
        }
        return names
    }

    /// The size of the database file once the write-ahead log is folded into it (where the
    /// file grows or shrinks in WAL mode).
    private func checkpointedSize(_ path: String) async throws -> Int {
        try await DatabaseQueue(path: path).writeWithoutTransaction { db in
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }

    /// `PRAGMA auto_vacuum`: 0 NONE, 1 FULL, 2 INCREMENTAL.
    private func autoVacuum(_ path: String) async throws -> Int {
        try await DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") ?? -1 }
    }
}
