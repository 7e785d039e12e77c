import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import Reachability
import QueueTestSupport
import Testing
import TestSupport

@Suite("Queue basics: enqueue, drain, lookup against a loopback server")
struct QueueBasicsTests {

    @Test("enqueued requests are delivered with their method, body, headers and idempotency key", arguments: StoreKind.allCases)
    func enqueueAndDrain(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            let body = Data("{\"n\":1}".utf8)
            let ticket = try await queue.enqueue(
                method: "POST", url: server.url("/echo?x=1").absoluteString,
                headers: [("Content-Type", "application/json"), ("X-Trace", "abc")], body: .data(body)
            )
            #expect(try await queue.counts().pending == 1)
            let summary = try await queue.drain()
            #expect(summary.delivered == 1)
            #expect(summary.remaining == 0)
            let seen = try #require(server.requests.last)
            #expect(seen.method == "POST")
            #expect(seen.path == "/echo")
            #expect(seen.queryValue("x") == "1")
            #expect(seen.bodySize == body.count)
            #expect(seen.values(of: "X-Trace") == ["abc"])
            #expect(seen.values(of: "Idempotency-Key") == [ticket.idempotencyKey])
            let entry = try #require(try await queue.entry(ticket.id))
            #expect(entry.state == .delivered)
            #expect(entry.attempts == 1)
            #expect(entry.lastStatus == 200)
            await server.shutdown()
        }
    }

    @Test("a large body is stored in a file beside the database and streamed at replay", arguments: StoreKind.allCases)
    func largeBodyInFile(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server) { $0.inlineBodyLimit = 1024 }
            let payload = Data((0..<300_000).map { UInt8($0 % 251) })
            let ticket = try await queue.enqueue(method: "PUT", url: server.url("/upload").absoluteString, body: .data(payload))
            let entry = try #require(try await queue.entry(ticket.id))
            guard case .file(let name, let length) = entry.body else { Issue.record("expected a body file"); return }
            #expect(length == payload.count)
            // Kept apart from the row: a file beside the database, or chunks in the body table.
            let kept = { try await store.bodyExists(name) }
            #expect(try await kept())
            _ = try await queue.drain()
            #expect(server.requests.last?.bodySize == payload.count)
            #expect(server.requests.last?.bodyCRC32 == CRC32.checksum(payload))
            #expect(try await queue.purge(.states([.delivered], finishedBefore: nil)) == 1)
            #expect(try await !kept())
            await server.shutdown()
        }
    }

    @Test("the database file is created with mode 0600 and in WAL mode")
    func fileModeAndWAL() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        _ = try makeQueue(path: folder.databasePath, server: server)
        let attributes = try FileManager.default.attributesOfItem(atPath: folder.databasePath)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let journal = try await DatabaseQueue(path: folder.databasePath).read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
        await server.shutdown()
    }
}
