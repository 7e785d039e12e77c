import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import QueueEncryption
import QueueTestSupport
import Testing
import TestSupport

/// Responses entries keep (``EnqueueOptions/keepResponse``) and outcomes awaited from any
/// process (``OfflineQueue/outcome(of:timeout:)``), on every store.
@Suite("Offline work in steps: kept responses and awaited outcomes")
struct KeptResponseTests {
    private static let keeping = ResponseKeeping()

    // MARK: - The storage contract

    @Test("a delivery keeps its response in the commit that records it, a lost one keeps none, retention removes it; ids given stay known", arguments: StoreKind.allCases)
    func contract(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            var keeps = Spec().entry(key: "keeps")
            keeps.keepResponse = Self.keeping
            let plain = Spec().entry(key: "plain")
            var lost = Spec().entry(key: "lost")
            lost.keepResponse = ResponseKeeping(headers: ["etag"], bodyLimit: 10)
            let ids = try await contract.storage.insert([keeps, plain], now: contract.now).map(\.id)
                + contract.storage.insert([lost], now: contract.now).map(\.id)
            // The first two under a long lease, the third under a short one.
            let claimed = try await contract.claim(limit: 2).claimed + contract.claim(lease: .seconds(1)).claimed
            #expect(claimed.map(\.id) == ids)
            #expect(claimed[0].keepResponse == Self.keeping, "the claim carries what to keep")
            #expect(claimed[1].keepResponse == nil)
            #expect(claimed[2].keepResponse == ResponseKeeping(headers: ["etag"], bodyLimit: 10))
            // The third one's lease lapses and another drainer claims it: the first drainer's
            // delivery of it is lost, and keeps nothing.
            contract.clock.advance(by: .seconds(2))
            let other = try await contract.drainer()
            #expect(try await contract.claim(other).claimed.map(\.id) == [ids[2]])
            let response = StoredResponse(bytes: KeptResponse(status: 201, body: Data("{\"id\":7}".utf8)).encoded, keyID: nil)
            let result = try await contract.claim(settling: [
                Settlement(id: ids[0], transition: .deliver(status: 201), kept: response),
                Settlement(id: ids[1], transition: .deliver(status: 200)),
                Settlement(id: ids[2], transition: .deliver(status: 201), kept: response),
            ])
            #expect(result.lost == [ids[2]])
            #expect(try await contract.storage.keptResponse(of: ids[0]) == response)
            #expect(try await contract.storage.keptResponse(of: ids[1]) == nil)
            #expect(try await contract.storage.keptResponse(of: ids[2]) == nil, "a lost settlement keeps nothing")
            let retention = try await contract.storage.deleteDelivered(finishedBefore: contract.now.wall.addingTimeInterval(86_400))
            #expect(retention.deletedEntries == 2)
            #expect(try await contract.storage.keptResponse(of: ids[0]) == nil, "retention removes the kept response with its entry")
            #expect(try await contract.storage.wasIssued(ids[0]), "a purged id was given")
            #expect(try await contract.storage.wasIssued(ids[2]))
            #expect(try await !contract.storage.wasIssued(ids[2] + 1))
            #expect(try await !contract.storage.wasIssued(0))
            await other.close()
        }
    }

    @Test("an observer hears a delivery, a death and a purge made by another drainer, and nothing once stopped", arguments: StoreKind.allCases)
    func observers(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let heard = WakeSignalProbe()
            let watch = await contract.storage.observeSettlements { heard.fire() }
            let other = try await contract.drainer()
            let ids = try await contract.insert([Spec(), Spec(), Spec()])
            #expect(try await contract.claim(other).claimed.count == 3)
            let rejected = EntryLifecycle.Transition.deadLetter(.init(.rejected, status: 422, error: "HTTP 422"))
            for (id, transition) in [(ids[0], EntryLifecycle.Transition.deliver(status: 200)), (ids[1], rejected)] {
                let before = heard.count
                _ = try await contract.settle([Settlement(id: id, transition: transition)], by: other)
                #expect(await heard.reaches(before + 1), "heard \(transition)")
            }
            let before = heard.count
            _ = try await contract.storage.purge(.ids([ids[0]]), now: contract.now)
            #expect(await heard.reaches(before + 1), "heard the purge")
            watch.stop()
            await other.close()
        }
    }

    // MARK: - The engine, against a loopback server

    @Test("outcome(of:) in one queue wakes when another drains: delivered with the kept response (cut at its limit), dead with its reason, purged; an unknown id is refused", arguments: StoreKind.allCases)
    func awaited(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            server.route("/notes") { _, writer in
                try await writer.respond(
                    status: 201,
                    headers: [
                        HeaderField(name: "Location", value: "/notes/7"), HeaderField(name: "ETag", value: "\"v1\""),
                        HeaderField(name: "X-Other", value: "not kept"), HeaderField(name: "Content-Type", value: "application/json"),
                    ],
                    body: Data("{\"id\":7,\"text\":\"hello\"}".utf8)
                )
            }
            server.script("/refused", status: 422, body: Data("no".utf8))
            let waiter = try await makeQueue(on: store, server: server)
            let drainer = try await makeQueue(on: store, server: server)
            let url = server.url("/notes").absoluteString
            let create = try await waiter.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(keepResponse: Self.keeping))])[0]
            let cut = try await waiter.enqueue([QueuedRequest(
                method: "POST", url: url, options: EnqueueOptions(keepResponse: ResponseKeeping(headers: ["ETag", "etag"], bodyLimit: 6))
            )])[0]
            let refused = try await waiter.enqueue([QueuedRequest(
                method: "POST", url: server.url("/refused").absoluteString, options: EnqueueOptions(keepResponse: Self.keeping)
            )])[0]
            let plain = try await waiter.enqueue(method: "POST", url: url)
            #expect(try await waiter.currentOutcome(of: create.id) == nil, "still pending")
            #expect(try await waiter.outcome(of: create.id, timeout: .zero) == nil, "a timeout that passed returns nil")
            // Three waits that only the store's word can end within the guard.
            let (ended, progress) = await ProgressGuard.run(starting: "waiting") { progress in
                async let first = try? waiter.outcome(of: create.id, timeout: nil, recheck: .seconds(3600))
                async let second = try? waiter.outcome(of: refused.id, timeout: nil, recheck: .seconds(3600))
                async let third = try? waiter.outcome(of: cut.id, timeout: nil, recheck: .seconds(3600))
                _ = try? await drainUntilSettled(drainer)
                progress.progressed("awaiting the outcomes")
                let outcomes = await [first, second, third]
                guard case .delivered(let status, let kept)? = outcomes[0], status == 201, let response = kept else {
                    Issue.record("the create: \(String(describing: outcomes[0]))")
                    return
                }
                #expect(response.status == 201)
                #expect(response.headers == [StoredHeader(name: "location", value: "/notes/7"), StoredHeader(name: "etag", value: "\"v1\""),
                                             StoredHeader(name: "content-type", value: "application/json")])
                #expect(response.header("Location") == "/notes/7")
                #expect(response.body == Data("{\"id\":7,\"text\":\"hello\"}".utf8) && !response.truncated)
                guard case .dead(.rejected, _)? = outcomes[1] else {
                    Issue.record("the refused one: \(String(describing: outcomes[1]))")
                    return
                }
                guard case .delivered(let status, let kept)? = outcomes[2], status == 201, let short = kept else {
                    Issue.record("the cut one: \(String(describing: outcomes[2]))")
                    return
                }
                #expect(short.headers == [StoredHeader(name: "etag", value: "\"v1\"")] && short.body == Data("{\"id\":".utf8) && short.truncated)
            }
            #expect(ended, "an outcome was not heard of: \(progress.step)")
            #expect(try await waiter.outcome(of: plain.id) == .delivered(status: 201, response: nil), "an entry that keeps nothing")
            _ = try await waiter.purge(.ids([create.id]))
            #expect(try await waiter.store.keptResponse(of: create.id) == nil, "a purge removes the kept response")
            #expect(try await waiter.outcome(of: create.id) == .purged)
            await #expect(throws: QueueError.noSuchEntry(plain.id + 1)) { _ = try await waiter.outcome(of: plain.id + 1) }
            await #expect(throws: QueueError.invalidRequest("a kept response's body limit must be 0 to 1048576 bytes, not -1")) {
                _ = try await waiter.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(keepResponse: ResponseKeeping(bodyLimit: -1)))])
            }
            await #expect(throws: QueueError.invalidRequest("'bad name' is not a header field name to keep")) {
                _ = try await waiter.enqueue([QueuedRequest(method: "POST", url: url, options: EnqueueOptions(keepResponse: ResponseKeeping(headers: ["bad name"])))])
            }
            await waiter.close()
            await drainer.close()
            await server.shutdown()
        }
    }

    @Test("a sealing queue seals the kept response: it opens with the keyring, is refused without it, and is nowhere at rest", arguments: StoreKind.allCases)
    func sealed(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let marker = SealingTests.marker
            server.route("/notes") { _, writer in
                try await writer.respond(status: 201, headers: [HeaderField(name: "ETag", value: marker)], body: Data("{\"secret\":\"\(marker)\"}".utf8))
            }
            let keyring = Keyring.generate()
            let queue = try await makeQueue(on: store, server: server) { $0.sealing = QueueSealing(mode: .on, keyring: keyring) }
            let ticket = try await queue.enqueue([QueuedRequest(
                method: "POST", url: server.url("/notes").absoluteString, options: EnqueueOptions(keepResponse: Self.keeping)
            )])[0]
            #expect(try await drainUntilSettled(queue).delivered == 1)
            let outcome: EntryOutcome? = try await queue.currentOutcome(of: ticket.id)
            guard case .delivered(let status, let kept)? = outcome, status == 201, let response = kept else {
                Issue.record("not delivered with its response")
                return
            }
            #expect(response.header("etag") == marker && response.body == Data("{\"secret\":\"\(marker)\"}".utf8))
            let stored = try #require(try await queue.store.keptResponse(of: ticket.id))
            #expect(stored.keyID == keyring.primary.id.rawValue && stored.bytes.range(of: Data(marker.utf8)) == nil)
            try await SealingTests().expectNoMarker(in: store, dumpAtLeast: 1000)
            await queue.close()
            // Without the keyring: the entry reads, its response does not.
            let reader = try await makeQueue(on: store, server: server)
            await #expect(throws: QueueError.self) { _ = try await reader.currentOutcome(of: ticket.id) }
            #expect(try await reader.entry(ticket.id)?.state == .delivered)
            await reader.close()
            await server.shutdown()
        }
    }
}

/// Counts the calls of an observer, and waits for a count without a deadline of its own (the
/// suite's hang guard judges).
final class WakeSignalProbe: Sendable {
    private let calls = LockedBox(0)

    func fire() { calls.withLock { $0 += 1 } }

    var count: Int { calls.current }

    /// Whether the count reaches `target` before the hang guard passes.
    func reaches(_ target: Int) async -> Bool {
        let deadline = ContinuousClock.now + .hangGuard
        while calls.current < target {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
