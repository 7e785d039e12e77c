import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Entries that wait for others, drained by the engine against a real loopback server.
@Suite("Offline work in steps: entries that wait for others, drained")
struct DependencyDrainTests {
    @Test("a tag waits for its note's create, however high its priority; a note whose create is refused takes its children with it", arguments: StoreKind.allCases)
    func createThenChildren(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let arrivals = LockedBox([String]())
            server.route("/notes") { request, writer in
                arrivals.withLock { $0.append(request.path) }
                // The second note's create is refused for good.
                try await writer.respond(status: request.queryValue("bad") == nil ? 201 : 422)
            }
            server.route("/notes/tags") { request, writer in
                arrivals.withLock { $0.append(request.path + "?" + (request.queryValue("n") ?? "")) }
                try await writer.respond(status: 200)
            }
            let queue = try await makeQueue(on: store, server: server, concurrency: 8)
            let create = try await queue.enqueue(method: "POST", url: server.url("/notes").absoluteString)
            let tag = try await queue.enqueue([QueuedRequest(
                method: "POST", url: server.url("/notes/tags?n=1").absoluteString, options: EnqueueOptions(priority: 9, after: [create.id])
            )])[0]
            let refused = try await queue.enqueue(method: "POST", url: server.url("/notes?bad=1").absoluteString)
            let orphan = try await queue.enqueue([QueuedRequest(
                method: "POST", url: server.url("/notes/tags?n=2").absoluteString, options: EnqueueOptions(priority: 9, after: [refused.id])
            )])[0]
            #expect(try await queue.entry(tag.id)?.state == .blocked)
            let summary = try await drainUntilSettled(queue)
            #expect(summary.blocked == 0)
            let order = arrivals.current
            #expect(order.filter { $0.hasPrefix("/notes/tags") } == ["/notes/tags?1"], "the orphan is never sent")
            #expect(order.firstIndex(of: "/notes")! < order.firstIndex(of: "/notes/tags?1")!, "the tag goes after its note, whatever its priority")
            #expect(try await queue.entry(tag.id)?.state == .delivered)
            let dead = try #require(try await queue.entry(orphan.id))
            #expect(dead.state == .dead && dead.deadReason == .parentDead)
            #expect(try await queue.dependencies(of: create.id).children == [tag.id])
            await queue.close()
        }
    }

    @Test("an entry that waits for one the queue does not hold, or for an id that cannot be one, is refused and nothing is stored", arguments: StoreKind.allCases)
    func refused(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            let url = server.url("/x").absoluteString
            await #expect(throws: QueueError.noSuchDependency(42)) {
                _ = try await queue.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(after: [42]))])
            }
            await #expect(throws: QueueError.invalidRequest("entry id 0 to wait for is not an entry id")) {
                _ = try await queue.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(after: [0]))])
            }
            let many = (1...65).map { EntryID($0) }
            await #expect(throws: QueueError.invalidRequest("an entry may wait for at most 64 others, not 65")) {
                _ = try await queue.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(after: many))])
            }
            #expect(try await queue.counts().total == 0)
            await queue.close()
        }
    }
}
