import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Each kind of server fault, against the loopback server, ending in the state the policy says.
/// Backoff and `Retry-After` run on an injected clock: the tests wait for no backoff.
@Suite("Server faults end in the right state")
struct ServerFaultTests {
    /// Enqueues one POST to `path`, drains until settled, and returns the entry and the keys
    /// the server saw for it.
    func run(
        _ kind: StoreKind, _ path: String, policy: DeliveryPolicy? = nil, transport: any Transport = sharedTransport,
        clock: ManualQueueClock = ManualQueueClock(), setUp: (TestHTTPServer) -> Void
    ) async throws -> (QueueEntry, [String]) {
        let store = try TestStore(kind)
        return try await removing(store) {
            let server = try await TestHTTPServer.start()
            setUp(server)
            let queue = try await makeQueue(
                on: store, server: server,
                policy: policy ?? DeliveryPolicy(backoff: Backoff(base: .milliseconds(10), cap: .milliseconds(50)), maxAttempts: 5),
                transport: transport
            ) { $0.clock = clock.queueClock }
            let ticket = try await queue.enqueue(method: "POST", url: server.url(path).absoluteString, body: .data(Data("{}".utf8)))
            try await drainUntilSettled(queue, advancing: clock)
            let entry = try #require(try await queue.entry(ticket.id))
            let keys = idempotencyKeys(server, path: path)
            #expect(Set(keys) == [ticket.idempotencyKey], "every attempt carries the same key")
            await server.shutdown()
            return (entry, keys)
        }
    }

    @Test("500 twice, then 200: delivered on the third attempt", arguments: StoreKind.allCases)
    func serverErrors(_ kind: StoreKind) async throws {
        let (entry, keys) = try await run(kind, "/flaky") { scriptFailures($0, "/flaky", [(500, []), (500, [])]) }
        #expect(entry.state == .delivered)
        #expect(entry.attempts == 3)
        #expect(keys.count == 3)
    }

    @Test("503 with Retry-After waits as long as the server asks", arguments: StoreKind.allCases)
    func retryAfter(_ kind: StoreKind) async throws {
        let clock = ManualQueueClock()
        let started = clock.queueClock.now().wall
        let (entry, keys) = try await run(kind, "/busy", clock: clock) { scriptFailures($0, "/busy", [(503, [HeaderField(name: "Retry-After", value: "1")])]) }
        #expect(entry.state == .delivered)
        #expect(keys.count == 2)
        #expect(try #require(entry.finishedAt).timeIntervalSince(started) >= 0.95)
    }

    @Test("429 is retried", arguments: StoreKind.allCases)
    func tooManyRequests(_ kind: StoreKind) async throws {
        let (entry, keys) = try await run(kind, "/limited") { scriptFailures($0, "/limited", [(429, [])]) }
        #expect(entry.state == .delivered)
        #expect(keys.count == 2)
    }

    @Test("a connection closed without an answer is retried", arguments: StoreKind.allCases)
    func connectionReset(_ kind: StoreKind) async throws {
        let (entry, keys) = try await run(kind, "/reset") { scriptFailures($0, "/reset", [nil, nil]) }
        #expect(entry.state == .delivered)
        #expect(entry.attempts == 3)
        #expect(keys.count == 3)
    }

    @Test("a timeout is retried", arguments: StoreKind.allCases)
    func timeout(_ kind: StoreKind) async throws {
        // The first answer never comes, and its request's deadline passes when it has arrived;
        // the second is answered at once. Neither depends on how fast the machine is.
        let deadlines = ManualDeadlines()
        let (entry, keys) = try await run(kind, "/slow", transport: deadlines.transport(over: sharedTransport)) { server in
            let calls = LockedBox(0)
            server.route("/slow") { _, writer in
                let call = calls.withLock { count -> Int in
                    count += 1
                    return count
                }
                if call == 1 {
                    deadlines.expire()
                    try await Task.sleep(for: .hangGuard)
                }
                try await writer.respond(status: 200)
            }
        }
        #expect(deadlines.expired == 1, "the first send missed its deadline")
        #expect(entry.state == .delivered)
        #expect(entry.attempts == 2)
        #expect(keys.count == 2)
    }

    @Test("a garbage answer is retried within the budget, then dead-lettered", arguments: StoreKind.allCases)
    func garbage(_ kind: StoreKind) async throws {
        let (entry, keys) = try await run(kind, "/garbage", policy: DeliveryPolicy(backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(10)), maxAttempts: 3)) { _ in }
        #expect(entry.state == .dead)
        #expect(entry.attempts == 3)
        #expect(keys.count == 3)
        #expect(entry.deadReason == .attemptsExhausted)
    }

    @Test("400, 404 and 422 go to dead letters at once, with status and body excerpt", arguments: StoreKind.allCases, [400, 404, 422])
    func deadLetters(_ kind: StoreKind, status: Int) async throws {
        let (entry, keys) = try await run(kind, "/reject") { scriptFailures($0, "/reject", Array(repeating: (status, []), count: 5)) }
        #expect(entry.state == .dead)
        #expect(entry.attempts == 1)
        #expect(keys.count == 1)
        #expect(entry.lastStatus == status)
        #expect(entry.responseExcerpt == "{\"error\":\"status \(status)\"}")
    }

    @Test("5xx until the budget runs out ends in dead letters", arguments: StoreKind.allCases)
    func budget(_ kind: StoreKind) async throws {
        let (entry, keys) = try await run(kind, "/down", policy: DeliveryPolicy(backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(10)), maxAttempts: 4)) {
            scriptFailures($0, "/down", Array(repeating: (503, []), count: 10))
        }
        #expect(entry.state == .dead)
        #expect(entry.attempts == 4)
        #expect(keys.count == 4)
        #expect(entry.lastStatus == 503)
    }

    @Test("a dead entry retried by hand gets a fresh budget and is delivered", arguments: StoreKind.allCases)
    func manualRetry(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            scriptFailures(server, "/later", [(404, [])])
            let queue = try await makeQueue(on: store, server: server)
            let ticket = try await queue.enqueue(method: "POST", url: server.url("/later").absoluteString)
            try await drainUntilSettled(queue)
            #expect(try await queue.entry(ticket.id)?.state == .dead)
            #expect(try await queue.retryDead() == [ticket.id])
            let retried = try #require(try await queue.entry(ticket.id))
            #expect(retried.state == .pending)
            #expect(retried.attempts == 0)
            try await drainUntilSettled(queue)
            #expect(try await queue.entry(ticket.id)?.state == .delivered)
            #expect(try await queue.purge(.states([.delivered], finishedBefore: Date().addingTimeInterval(-3600))) == 0)
            #expect(try await queue.purge(.states([.delivered], finishedBefore: nil)) == 1)
            await server.shutdown()
        }
    }
}
