import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueue
import OfflineQueueCore
import QueueTestSupport
import Reachability
import Testing
import TestSupport

/// Outcomes the app decides (issue 48, part 4), on every store, against a real loopback server
/// that versions a note with ETags: a conflict goes to the queue's resolver in the drainer's
/// process, or waits for an operator; an entry's own delivery policy.
@Suite("Offline work in steps: conflicts the app decides, and a delivery policy per entry")
struct ConflictTests {
    /// A note on the server at `path`, versioned: `GET` answers its ETag; a `PUT` whose
    /// `If-Match` names the current version makes the next one (200), any other answers 412
    /// with the current ETag. `version` starts at 2: someone edited it since the app read v1.
    final class Note: Sendable {
        let version = LockedBox(2)
        let puts = LockedBox<[(ifMatch: String?, key: String?)]>([])
        let gets = LockedBox(0)

        init(_ server: TestHTTPServer, path: String) {
            server.route(path) { [self] request, writer in
                let current = "\"v\(version.current)\""
                if request.method == "GET" {
                    gets.withLock { $0 += 1 }
                    return try await writer.respond(status: 200, headers: [HeaderField(name: "ETag", value: current)], body: Data("{}".utf8))
                }
                let ifMatch = request.headers.first { $0.name.lowercased() == "if-match" }?.value
                let key = request.headers.first { $0.name.lowercased() == "idempotency-key" }?.value
                puts.withLock { $0.append((ifMatch, key)) }
                guard ifMatch == current else {
                    return try await writer.respond(
                        status: 412, headers: [HeaderField(name: "ETag", value: current)], body: Data("{\"error\":\"stale\"}".utf8)
                    )
                }
                version.withLock { $0 += 1 }
                try await writer.respond(status: 200, body: Data("{\"saved\":true}".utf8))
            }
        }
    }

    /// The resolver the app registers: on a 412, re-read the note's ETag with a GET of its
    /// own and send the edit again under it; anything else is left for an operator.
    static func rereadingETag(_ server: TestHTTPServer, calls: LockedBox<Int>) -> QueueConflict.Resolver {
        { conflict in
            calls.withLock { $0 += 1 }
            guard conflict.response.status.code == 412, let path = URL(string: conflict.request.url)?.path else { return .leave }
            let client = APIClient(configuration: ClientConfiguration(baseURL: server.baseURL, timeout: .hangGuard), transport: sharedTransport)
            guard let fresh = try? await client.send(Request<Void>.get(path)), let etag = fresh.headers[.eTag] else { return .leave }
            var request = conflict.request
            request.headers.removeAll { $0.name.lowercased() == "if-match" }
            request.headers.append((name: "If-Match", value: etag))
            return .send(request)
        }
    }

    @Test("a 412 goes to the app's resolver, which re-reads the ETag: the edit is sent again in the entry's place and delivered; the request that conflicted is kept superseded", arguments: StoreKind.allCases)
    func resolverRereadsETag(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let note = Note(server, path: "/notes/7")
            let calls = LockedBox(0)
            let queue = try await makeQueue(on: store, server: server) { $0.conflictResolver = Self.rereadingETag(server, calls: calls) }
            let edit = try await queue.enqueue(
                method: "PUT", url: server.url("/notes/7").absoluteString, headers: [(name: "If-Match", value: "\"v1\"")],
                body: .data(Data("{\"text\":\"offline edit\"}".utf8)), options: EnqueueOptions(group: "note-7")
            )
            let after = try await queue.enqueue(method: "POST", url: server.url("/echo/tags").absoluteString, options: EnqueueOptions(group: "note-7"))
            var summary = try await queue.drain()
            if try await queue.counts().open > 0 { summary = try await queue.drain() }
            #expect(calls.current == 1 && note.gets.current == 1)
            let puts = note.puts.current
            #expect(puts.map(\.ifMatch) == ["\"v1\"", "\"v2\""], "the edit went again under the re-read ETag: \(puts)")
            #expect(puts.count == 2 && puts[0].key != puts[1].key, "the new request has an idempotency key of its own")
            #expect(note.version.current == 3)
            let entry = try #require(try await queue.entry(edit.id))
            #expect(entry.state == .delivered && entry.lastStatus == 200)
            #expect(try await queue.entry(after.id)?.state == .delivered, "the group went on once the edit was delivered")
            let superseded = try await queue.entries(EntryFilter(states: [.superseded]))
            #expect(superseded.count == 1)
            let kept = try #require(superseded.first)
            #expect(kept.lastStatus == 412 && kept.headers.contains { $0.value == "\"v1\"" })
            #expect(kept.lastError?.contains("replaced by the app's conflict resolver") == true, "\(kept.lastError ?? "")")
            guard case .delivered(let status, _)? = try await queue.currentOutcome(of: edit.id) else {
                Issue.record("the edit's outcome is not delivered")
                return
            }
            #expect(status == 200 && summary.conflicts == 0)
            await server.shutdown()
            await queue.close()
        }
    }

    @Test("without a resolver a 409 waits in conflict with the server's answer: its group and the entries waiting for it hold; an operator's retry sends it again", arguments: StoreKind.allCases)
    func conflictWaitsForOperator(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let accepting = LockedBox(false)
            server.route("/orders/1") { _, writer in
                if accepting.current { return try await writer.respond(status: 200) }
                try await writer.respond(status: 409, body: Data("{\"error\":\"out of stock\"}".utf8))
            }
            let queue = try await makeQueue(on: store, server: server)
            let order = try await queue.enqueue(method: "PUT", url: server.url("/orders/1").absoluteString, options: EnqueueOptions(group: "orders"))
            let next = try await queue.enqueue(method: "POST", url: server.url("/echo/next").absoluteString, options: EnqueueOptions(group: "orders"))
            let child = try await queue.enqueue(method: "POST", url: server.url("/echo/child").absoluteString, options: EnqueueOptions(after: [order.id]))
            let summary = try await queue.drain()
            #expect(summary.conflicts == 1 && summary.dead == 0 && summary.delivered == 0)
            let waiting = try #require(try await queue.entry(order.id))
            #expect(waiting.state == .conflict && waiting.lastStatus == 409 && waiting.attempts == 1)
            #expect(waiting.responseExcerpt?.contains("out of stock") == true)
            #expect(try await queue.entry(next.id)?.state == .pending, "its group waits behind the conflict")
            #expect(try await queue.entry(child.id)?.state == .blocked, "what waits for it keeps waiting")
            #expect(try await queue.entries(EntryFilter(states: [.conflict])).map(\.id) == [order.id])
            let counts = try await queue.counts()
            #expect(counts.conflict == 1 && counts.open == 3)
            #expect(try await queue.currentOutcome(of: order.id) == nil, "a conflict is not settled")
            // Draining again sends nothing more: the conflict holds.
            _ = try await queue.drain()
            #expect(server.requests.filter { $0.path == "/echo/next" }.isEmpty)
            // The operator decides the order should go as it is.
            accepting.withLock { $0 = true }
            #expect(try await queue.retry(matching: EntrySelection(states: [.conflict])).ids == [order.id])
            _ = try await drainUntilSettled(queue)
            for id in [order.id, next.id, child.id] { #expect(try await queue.entry(id)?.state == .delivered) }
            #expect(server.requests.filter { $0.path == "/orders/1" }.count == 2)
            #expect(server.requests.map(\.path).filter { $0.hasPrefix("/echo/") }.sorted() == ["/echo/child", "/echo/next"])
            await server.shutdown()
            await queue.close()
        }
    }

    @Test("a resolver that drops an entry makes it superseded (what waits for it dies as for a purged parent); one that fails it makes it dead with reason conflict", arguments: StoreKind.allCases)
    func dropAndFail(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            server.script("/stale/drop", status: 409)
            server.script("/stale/fail", status: 412)
            let queue = try await makeQueue(on: store, server: server) { configuration in
                configuration.conflictResolver = { conflict in conflict.request.url.hasSuffix("/drop") ? .drop : .fail }
            }
            let dropped = try await queue.enqueue(method: "PUT", url: server.url("/stale/drop").absoluteString)
            let failed = try await queue.enqueue(method: "PUT", url: server.url("/stale/fail").absoluteString)
            let orphan = try await queue.enqueue(method: "POST", url: server.url("/echo/orphan").absoluteString, options: EnqueueOptions(after: [dropped.id]))
            let events = queue.events()
            let seen = LockedBox<[QueueEvent]>([])
            let watcher = Task { for await event in events { seen.withLock { $0.append(event) } } }
            defer { watcher.cancel() }
            let summary = try await queue.drain()
            #expect(summary.dropped == 1 && summary.dead == 1)
            let gone = try #require(try await queue.entry(dropped.id))
            #expect(gone.state == .superseded && gone.lastStatus == 409 && gone.lastError?.contains("dropped by the app's conflict resolver") == true)
            let dead = try #require(try await queue.entry(failed.id))
            #expect(dead.state == .dead && dead.deadReason == .conflict && dead.lastStatus == 412)
            let child = try #require(try await queue.entry(orphan.id))
            #expect(child.state == .dead && child.deadReason == .parentDead)
            guard case .superseded? = try await queue.currentOutcome(of: dropped.id) else {
                Issue.record("a dropped entry's outcome is superseded")
                return
            }
            #expect(await eventually { seen.current.contains(.dropped(id: dropped.id, status: 409)) }, "\(seen.current)")
            #expect(server.requests.filter { $0.path.hasPrefix("/stale/") }.count == 2, "each sent once")
            await server.shutdown()
            await queue.close()
        }
    }

    @Test("an entry's own delivery policy: its status rules, attempts and backoff replace the queue's for it alone, on every store", arguments: StoreKind.allCases)
    func entryPolicy(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server, policy: DeliveryPolicy(backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(10)), maxAttempts: 5))
            // A DELETE of what is gone already did its work.
            let gone = try await queue.enqueue(
                method: "DELETE", url: server.url("/status/404").absoluteString,
                options: EnqueueOptions(delivery: EntryDelivery(statuses: [StatusRule(404, .delivered)]))
            )
            let plain = try await queue.enqueue(method: "DELETE", url: server.url("/status/404?plain").absoluteString)
            // Two attempts, not the queue's five.
            let short = try await queue.enqueue(
                method: "POST", url: server.url("/status/500").absoluteString,
                options: EnqueueOptions(delivery: EntryDelivery(maxAttempts: 2, backoff: Backoff(base: .milliseconds(1), cap: .milliseconds(2))))
            )
            // A 409 the entry calls dead, not a conflict.
            let final = try await queue.enqueue(
                method: "POST", url: server.url("/status/409").absoluteString,
                options: EnqueueOptions(delivery: EntryDelivery(statuses: [StatusRule(400...499, .dead)]))
            )
            let stored = try #require(try await queue.entry(short.id))
            #expect(stored.delivery?.maxAttempts == 2 && stored.delivery?.backoff?.base == .milliseconds(1))
            #expect(try await queue.entry(plain.id)?.delivery == nil)
            _ = try await drainUntilSettled(queue)
            #expect(try await queue.entry(gone.id)?.state == .delivered)
            let rejected = try #require(try await queue.entry(plain.id))
            #expect(rejected.state == .dead && rejected.deadReason == .rejected)
            let exhausted = try #require(try await queue.entry(short.id))
            #expect(exhausted.state == .dead && exhausted.deadReason == .attemptsExhausted && exhausted.attempts == 2)
            let dead = try #require(try await queue.entry(final.id))
            #expect(dead.state == .dead && dead.deadReason == .rejected && dead.lastStatus == 409)
            await server.shutdown()
            await queue.close()
        }
    }

    @Test("an entry's delivery policy is checked at enqueue, nothing stored when it is refused")
    func badPolicies() async throws {
        let store = try TestStore(.memory)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            let bad: [EntryDelivery] = [
                EntryDelivery(maxAttempts: -1),
                EntryDelivery(maxAge: .seconds(-5)),
                EntryDelivery(backoff: Backoff(base: .zero)),
                EntryDelivery(backoff: Backoff(base: .seconds(2), cap: .seconds(1))),
                EntryDelivery(statuses: [StatusRule(42, .delivered)]),
                EntryDelivery(statuses: [StatusRule(500...600, .retry)]),
            ]
            for delivery in bad {
                await #expect(throws: QueueError.self, "\(delivery)") {
                    try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, options: EnqueueOptions(delivery: delivery))
                }
            }
            #expect(try await queue.counts().total == 0)
            await server.shutdown()
            await queue.close()
        }
    }
}

@Suite("Status rules and the stored form of an entry's policy")
struct StatusRuleTests {
    @Test("409 and 412 are conflicts by default; an entry's rules come first; a 2xx is delivered unless a rule says otherwise")
    func meanings() {
        let queue = DeliveryPolicy()
        #expect(queue.statuses.meaning(of: 409) == .conflict && queue.statuses.meaning(of: 412) == .conflict)
        #expect(queue.statuses.meaning(of: 404) == .dead && queue.statuses.meaning(of: 503) == .retry && queue.statuses.meaning(of: 204) == .delivered)
        let entry = EntryDelivery(statuses: [StatusRule(404, .delivered), StatusRule(409, .retry)]).applied(to: queue)
        #expect(entry.statuses.meaning(of: 404) == .delivered && entry.statuses.meaning(of: 409) == .retry && entry.statuses.meaning(of: 412) == .conflict)
        let accepted = EntryDelivery(statuses: [StatusRule(202, .retry)]).applied(to: queue)
        guard case .retry = EntryLifecycle.transition(after: .delivered(status: 202), attempts: 0, age: .zero, policy: accepted, unitRandom: 0) else {
            Issue.record("a 202 the entry calls retry is retried")
            return
        }
        guard case .deliver = EntryLifecycle.transition(after: .delivered(status: 200), attempts: 0, age: .zero, policy: accepted, unitRandom: 0) else {
            Issue.record("a 200 is delivered")
            return
        }
    }

    @Test("a 425, 429 or 503 with Retry-After is a wait that spends no attempt, whatever the rules say", arguments: [425, 429, 503])
    func retryAfterWaits(_ status: Int) {
        var policy = EntryDelivery(maxAttempts: 1, statuses: [StatusRule(400...599, .conflict)]).applied(to: DeliveryPolicy())
        policy.maxRetryAfter = .seconds(60)
        let waited = EntryLifecycle.transition(
            after: .rejected(status: status, retryAfter: .seconds(30), excerpt: nil), attempts: 0, age: .zero, policy: policy, unitRandom: 0
        )
        guard case .retry(let retry) = waited else {
            Issue.record("\(status) with Retry-After became \(waited)")
            return
        }
        #expect(!retry.consumesAttempt && retry.after >= .seconds(30))
        // Without Retry-After the rule holds.
        guard case .conflict = EntryLifecycle.transition(
            after: .rejected(status: status, retryAfter: nil, excerpt: nil), attempts: 0, age: .zero, policy: policy, unitRandom: 0
        ) else {
            Issue.record("\(status) without Retry-After follows the rule")
            return
        }
    }

    @Test("the stored form reads back what it wrote, and nothing else")
    func storedForm() {
        let delivery = EntryDelivery(
            maxAttempts: 0, maxAge: .milliseconds(1500), backoff: Backoff(base: .milliseconds(250), multiplier: 3, cap: .seconds(90), jitter: false),
            statuses: [StatusRule(404, .delivered), StatusRule(500...599, .dead), StatusRule(409, .conflict)]
        )
        #expect(EntryDelivery(stored: delivery.stored) == delivery)
        #expect(EntryDelivery(stored: "attempts=3") == EntryDelivery(maxAttempts: 3))
        for text in ["attempts=x", "speed=3", "status=404:maybe", "status=500-400:dead", "backoff=1,2", "nonsense"] {
            #expect(EntryDelivery(stored: text) == nil, "\(text)")
        }
        // 0 lifts the queue's limits for the entry.
        let lifted = EntryDelivery(maxAttempts: 0, maxAge: .zero).applied(to: DeliveryPolicy(maxAttempts: 3, maxAge: .seconds(60)))
        #expect(lifted.maxAttempts == nil && lifted.maxAge == nil)
    }
}

/// Issue 48's scenario through the library, on every store (the memory store included, which
/// no second process can reach): a note created, edited twice, given an attachment (a stream)
/// and tagged, enqueued while offline by two queues on the store, then drained.
@Suite("Offline work in steps: the whole scenario through the library")
struct OfflineStepsLibraryTests {
    @Test("one create, one coalesced edit, the streamed attachment and the tag to /notes/N, in order, each once", arguments: StoreKind.allCases)
    func scenario(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let notes = NotesServer(server)
            let offline = ManualMonitor(.offline(.noCarrier))
            let app = try await makeQueue(on: store, server: server, monitor: offline)
            // A second queue on the store where a store can be shared (the memory store is one
            // process's: the same queue again).
            let other = kind == .memory ? app : try await makeQueue(on: store, server: server, monitor: offline)
            let create = try await app.enqueue(
                method: "POST", url: server.url("/notes").absoluteString, headers: [(name: "Content-Type", value: "application/json")],
                body: .data(Data("{\"title\":\"Groceries\"}".utf8)), options: EnqueueOptions(keepResponse: ResponseKeeping())
            )
            let note = server.url("/notes").absoluteString + "/${response:\(create.id):/id}"
            let step = EnqueueOptions(group: "note", after: [create.id])
            var edit = step
            edit.coalescingKey = "note-edit"
            for (queue, text) in [(app, "Milk"), (other, "Milk, eggs")] {
                _ = try await queue.enqueue(method: "PATCH", url: note, body: .data(Data("{\"title\":\"\(text)\"}".utf8)), options: edit)
            }
            let photo = NotesServer.attachment()
            _ = try await other.enqueue(
                method: "POST", url: note + "/attachments", headers: [(name: "Content-Type", value: "multipart/form-data; boundary=b0undary")],
                body: .stream(length: photo.count) { ByteStream(data: photo, chunkSize: 65_536) }, options: step
            )
            _ = try await app.enqueue(method: "POST", url: note + "/tags", body: .data(Data("{\"tag\":\"home\"}".utf8)), options: step)
            #expect(try await app.drain().delivered == 0 && server.requests.isEmpty, "offline: nothing sent")
            offline.status = .online(interface: "lo", family: .ipv4)
            _ = try await drainUntilSettled(app)
            #expect(notes.processed == NotesServer.inOrder)
            #expect(server.bodies(of: "/notes/100") == [Data("{\"title\":\"Milk, eggs\"}".utf8)])
            #expect(server.bodies(of: "/notes/100/attachments") == [photo])
            let counts = try await app.counts()
            #expect(counts.delivered == 4 && counts.superseded == 1 && counts.open == 0)
            await server.shutdown()
            if kind != .memory { await other.close() }
            await app.close()
        }
    }
}
