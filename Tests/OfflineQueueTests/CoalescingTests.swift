import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import OfflineQueueCore
import QueueTestSupport
import Testing
import TestSupport

/// Edits that coalesce (``EnqueueOptions/coalescingKey``), on every store: the waiting entry
/// takes the newer request in place, the old one is kept superseded, one in flight is waited
/// behind and never replaced.
@Suite("Offline work in steps: edits that coalesce")
struct CoalescingTests {
    private static func edit(_ key: String, coalescing: String, group: String? = nil, after: [EntryID] = []) -> NewEntry {
        var entry = Spec(key: key, group: group, after: after).entry
        entry.coalescingKey = coalescing
        return entry
    }

    @Test("the contract: a waiting entry takes the newer request in place and the old one is kept superseded; one in flight is waited behind, then replaced no more", arguments: StoreKind.allCases)
    func contract(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let first = try await contract.storage.insert([Self.edit("e1", coalescing: "note-7", group: "g")], now: contract.now)[0]
            #expect(first.superseded == nil && !first.deduplicated)
            let other = try await contract.insert([Spec(key: "other", group: "g")])[0]
            // The second edit takes the first one's place: its id, ahead of `other` in the group.
            let second = try await contract.storage.insert([Self.edit("e2", coalescing: "note-7", group: "g")], now: contract.now)[0]
            #expect(second.id == first.id && second.idempotencyKey == "e2" && !second.deduplicated)
            let record = try #require(second.superseded)
            #expect(record > other)
            let kept = try #require(try await contract.first.entry(record))
            #expect(kept.state == .superseded && kept.idempotencyKey == "e1" && kept.url.hasSuffix("/e1") && kept.coalescingKey == nil)
            #expect(kept.lastError?.contains("coalescing key \"note-7\", now entry \(first.id)") == true, "\(kept.lastError ?? "")")
            let replaced = try #require(try await contract.first.entry(first.id))
            #expect(replaced.idempotencyKey == "e2" && replaced.url.hasSuffix("/e2") && replaced.state == .pending && replaced.coalescingKey == "note-7")
            // The same idempotency key again is a deduplication, never a replacement.
            let again = try await contract.storage.insert([Self.edit("e1", coalescing: "note-7", group: "g")], now: contract.now)[0]
            #expect(again.deduplicated && again.id == record)
            // The group's head is the replaced entry; claimed, it is in flight.
            let claimed = try await contract.claim().claimed
            #expect(claimed.map(\.id) == [first.id], "the group's order kept: \(claimed.map(\.id))")
            #expect(claimed.first?.idempotencyKey == "e2")
            // In flight: a third edit is a new entry that waits behind it; a fourth replaces the third.
            let third = try await contract.storage.insert([Self.edit("e3", coalescing: "note-7")], now: contract.now)[0]
            #expect(third.id > record && third.superseded == nil)
            #expect(try await contract.first.entry(third.id)?.state == .blocked)
            let fourth = try await contract.storage.insert([Self.edit("e4", coalescing: "note-7")], now: contract.now)[0]
            #expect(fourth.id == third.id && fourth.superseded != nil)
            // The one in flight dies: the waiting edit goes anyway (it waited for the send, not its success).
            let rejected = EntryLifecycle.Transition.deadLetter(.init(.rejected, status: 422, error: "HTTP 422"))
            let next = try await contract.claim(settling: [Settlement(id: first.id, transition: rejected)]).claimed
            #expect(Set(next.map(\.id)) == [other, third.id], "\(next.map(\.id))")
            #expect(next.first { $0.id == third.id }?.idempotencyKey == "e4")
            let counts = try await contract.storage.counts(now: contract.now)
            #expect(counts.superseded == 2 && counts.dead == 1 && counts.inflight == 2)
            // Retention removes superseded records as it removes delivered ones.
            let removed = try await contract.storage.deleteDelivered(finishedBefore: contract.now.wall.addingTimeInterval(86_400))
            #expect(removed.deletedEntries == 2)
            #expect(try await contract.first.entry(record) == nil)
        }
    }

    @Test("a hundred edits of one note enqueued offline send one request, the last, in the group's order; what waited for the note waits for it still", arguments: StoreKind.allCases)
    func hundredEdits(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            server.keepBodies(of: "/echo/notes/7")
            let queue = try await makeQueue(on: store, server: server)
            let url = server.url("/echo/notes/7").absoluteString
            func edit(_ n: Int) -> QueuedRequest {
                QueuedRequest(
                    method: "PUT", url: url, body: .data(Data("{\"text\":\"draft \(n)\"}".utf8)),
                    options: EnqueueOptions(group: "note-7", keepResponse: ResponseKeeping(), coalescingKey: "note-7")
                )
            }
            let first = try await queue.enqueue([edit(0)])[0]
            let tag = try await queue.enqueue(method: "POST", url: server.url("/echo/tags").absoluteString, options: EnqueueOptions(after: [first.id]))
            _ = try await queue.enqueue(method: "POST", url: server.url("/echo/later").absoluteString, options: EnqueueOptions(group: "note-7"))
            var superseded: Set<EntryID> = []
            for n in 1..<100 {
                let ticket = try await queue.enqueue([edit(n)])[0]
                #expect(ticket.id == first.id)
                superseded.insert(try #require(ticket.superseded))
            }
            #expect(superseded.count == 99)
            // A superseded entry has ended: an awaited outcome says so at once.
            guard case .superseded(let error)? = try await queue.outcome(of: try #require(superseded.min()), timeout: .zero) else {
                Issue.record("not superseded")
                return
            }
            #expect(error?.contains("now entry \(first.id)") == true)
            let summary = try await drainUntilSettled(queue)
            #expect(summary.delivered == 3, "\(summary)")
            #expect(server.bodies(of: "/echo/notes/7") == [Data("{\"text\":\"draft 99\"}".utf8)], "one request, the last edit")
            let paths = server.requests.map(\.path)
            #expect(paths.firstIndex(of: "/echo/notes/7")! < paths.firstIndex(of: "/echo/later")!, "the note keeps its place in its group: \(paths)")
            #expect(paths.firstIndex(of: "/echo/notes/7")! < paths.firstIndex(of: "/echo/tags")!)
            #expect(try await queue.entry(tag.id)?.state == .delivered)
            #expect(try await queue.entries(EntryFilter(states: [.superseded])).count == 99)
            #expect(try await queue.counts().superseded == 99)
            await queue.close()
            await server.shutdown()
        }
    }

    @Test("a key that is empty, too long or holds a control character is refused, nothing stored")
    func badKeys() async throws {
        let store = try TestStore(.memory)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            for key in ["", String(repeating: "k", count: 257), "a\nb"] {
                await #expect(throws: QueueError.self) {
                    _ = try await queue.enqueue([QueuedRequest(method: "PUT", url: server.url("/echo").absoluteString, options: EnqueueOptions(coalescingKey: key))])
                }
            }
            #expect(try await queue.entries().isEmpty)
            await queue.close()
            await server.shutdown()
        }
    }
}
