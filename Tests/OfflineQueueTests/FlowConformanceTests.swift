import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Flow control by origin (``FlowControl``) as the storage contract keeps it, on every store:
/// pauses and shrunk concurrencies that answers leave for every drainer, limits held across
/// drainers, on the injected clock. Each second drainer stands for another process (on a file)
/// or another host (on PostgreSQL).
@Suite("Flow conformance: origins paused, slowed and limited for every drainer, on every store")
struct FlowConformanceTests {
    static let a = "https://a.test"
    static let b = "https://b.test"

    /// One commit by `queue` with the flow settings a drain of concurrency 8 passes, at the
    /// clock's time or at `now` (a reading taken earlier).
    static func commit(
        _ contract: Contract, _ queue: OfflineQueue? = nil, settling settlements: [Settlement] = [], limit: Int = 10,
        growAfter: Int = 8, at now: QueueTime? = nil
    ) async throws -> ClaimResult {
        try await (queue ?? contract.first).store.settleAndClaim(
            settlements, now: now ?? contract.now, claimLimit: limit, lease: .seconds(600), attemptedSince: nil,
            chores: ClaimChores(flow: FlowSettings(maxPause: 3600, growAfter: growAfter, ceiling: 8))
        )
    }

    static func specs(_ origin: String, _ count: Int) -> [Spec] {
        (0..<count).map { _ in Spec(url: origin + "/items/" + UUID().uuidString) }
    }

    /// How `entry`'s attempt ended, as the drain settles it (with its URL).
    static func settlement(_ entry: QueueEntry, _ transition: EntryLifecycle.Transition) -> Settlement {
        Settlement(id: entry.id, transition: transition, url: entry.url)
    }

    static func tooMany(after: Duration?, status: Int = 429) -> EntryLifecycle.Transition {
        .retry(.init(after: after ?? .seconds(1), consumesAttempt: after == nil, status: status, error: "HTTP \(status)", originPause: after))
    }

    @Test("a 429 with Retry-After pauses its origin for every drainer until then; another origin flows; the pause ends by itself", arguments: StoreKind.allCases)
    func pauseByRetryAfter(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            _ = try await contract.insert(Self.specs(Self.a, 3) + Self.specs(Self.b, 2))
            let first = try await Self.commit(contract, limit: 1)
            let head = try #require(first.claimed.first)
            #expect(head.url.hasPrefix(Self.a) && first.heldFor == nil)

            let paused = try await Self.commit(contract, settling: [Self.settlement(head, Self.tooMany(after: .seconds(30)))])
            #expect(paused.claimed.allSatisfy { $0.url.hasPrefix(Self.b) } && paused.claimed.count == 2, "the other origin flows")
            let held = try #require(paused.heldFor, "the claim says its origin holds due entries back")
            #expect(held > .seconds(29) && held <= .seconds(30))
            #expect(paused.pausedOrigins == [Self.a], "a drainer learns which origins to give back what it holds of")
            let counts = try await contract.storage.counts(now: contract.now)
            #expect(counts.due == 0 && counts.heldByFlow == 2, "entries a pause holds are not due: \(counts.due), \(counts.heldByFlow)")

            // Another drainer (another process, another host) honours the stored pause.
            let other = try await contract.drainer()
            #expect(try await Self.commit(contract, other).claimed.isEmpty)
            let flows = try await other.originFlows()
            #expect(flows.map(\.origin) == [Self.a] && flows.first?.pauseStatus == 429)
            let until = try #require(flows.first?.pausedUntil)
            #expect(abs(until.timeIntervalSince(contract.now.wall) - 30) < 1)

            contract.clock.advance(by: .seconds(29))
            #expect(try await Self.commit(contract, other).claimed.isEmpty, "not a request before the Retry-After time")
            contract.clock.advance(by: .seconds(2))
            let resumed = try await Self.commit(contract, other)
            #expect(resumed.claimed.count == 3 && resumed.claimed.allSatisfy { $0.url.hasPrefix(Self.a) } && resumed.heldFor == nil)
            #expect(try await other.originFlows().isEmpty, "a pause that ended leaves no row")
            await other.close()
        }
    }

    @Test("an operator lifts an origin's pause at once; a later, shorter Retry-After does not shorten a pause", arguments: StoreKind.allCases)
    func resumeOrigin(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            _ = try await contract.insert(Self.specs(Self.a, 4))
            let two = try await Self.commit(contract, limit: 2).claimed
            #expect(two.count == 2)
            _ = try await Self.commit(contract, settling: [Self.settlement(two[0], Self.tooMany(after: .seconds(600), status: 503))], limit: 0)
            _ = try await Self.commit(contract, settling: [Self.settlement(two[1], Self.tooMany(after: .seconds(5)))], limit: 0)
            contract.clock.advance(by: .seconds(10))
            #expect(try await Self.commit(contract).claimed.isEmpty, "the longer pause holds")
            #expect(try await contract.first.originFlows().first?.pauseStatus == 503)
            #expect(try await contract.first.resume(origin: Self.a + "/"))
            #expect(try await Self.commit(contract).claimed.count == 3, "the entries not backing off (the 429's, after its 5 s) go at once")
            #expect(try await contract.first.resume(origin: Self.a) == false, "nothing left to lift")
        }
    }

    @Test("429s and 503s without Retry-After halve the origin's concurrency for every drainer; deliveries grow it back", arguments: StoreKind.allCases)
    func overloadShrinks(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            _ = try await contract.insert(Self.specs(Self.a, 20) + Self.specs(Self.b, 1))
            let eight = try await Self.commit(contract, limit: 8).claimed
            #expect(eight.count == 8)
            // 8 in flight meet a 503: the origin may have 4 in flight from now on.
            let shrunk = try await Self.commit(contract, settling: [Self.settlement(eight[0], Self.tooMany(after: nil, status: 503))])
            #expect(shrunk.claimed.map(\.url).allSatisfy { $0.hasPrefix(Self.b) }, "7 still in flight: none more to that origin")
            #expect(try await contract.first.originFlows().first?.concurrency == 4)
            let other = try await contract.drainer()
            #expect(try await Self.commit(contract, other).claimed.isEmpty, "the other drainer holds to it too")
            // Four delivered: 3 in flight, one more may go.
            let delivered = eight[1...4].map { Self.settlement($0, .deliver(status: 200)) }
            let next = try await Self.commit(contract, other, settling: [], limit: 10)
            #expect(next.claimed.isEmpty)
            _ = try await Self.commit(contract, settling: delivered, limit: 0)
            let one = try await Self.commit(contract, other)
            #expect(one.claimed.count == 1)
            // A 429 halves it again: 2.
            _ = try await Self.commit(contract, settling: [Self.settlement(eight[5], Self.tooMany(after: nil))], limit: 0)
            #expect(try await contract.first.originFlows().first?.concurrency == 2)
            // Two deliveries in a row (growAfter 2 here) grow it by one: 3.
            _ = try await Self.commit(contract, settling: [eight[6], eight[7]].map { Self.settlement($0, .deliver(status: 200)) }, limit: 0, growAfter: 2)
            #expect(try await contract.first.originFlows().first?.concurrency == 3)
            await other.close()
        }
    }

    // SQLite and memory: the store-neutral OriginFlowBook; PostgreSQL: settle_and_claim from
    // schema 13 on.
    @Test("a claim whose clock reading is older than the bucket's last refill (it waited for the store behind another) takes no token twice", arguments: StoreKind.allCases)
    func staleClaimTakesNoTokenTwice(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit(Self.a, requestsPerSecond: 10, burst: 2)], now: contract.now)
            _ = try await contract.insert(Self.specs(Self.a, 10))
            let other = try await contract.drainer()
            #expect(try await Self.commit(contract, limit: 1).claimed.count == 1, "t: one of the burst of 2")
            contract.clock.advance(by: .milliseconds(100))
            let stale = contract.now
            contract.clock.advance(by: .milliseconds(400))
            #expect(try await Self.commit(contract, other, limit: 1).claimed.count == 1, "t + 0.5 s: refilled to 2, one taken")
            // A claim that read the clock at t + 0.1 s and reached the store only now: the token
            // left is there for it, but the refill stays at t + 0.5 s.
            #expect(try await Self.commit(contract, other, limit: 1, at: stale).claimed.count == 1)
            contract.clock.advance(by: .milliseconds(100))
            // t + 0.6 s: one token since t + 0.5 s; moving the refill back to t + 0.1 s would give 2.
            #expect(try await Self.commit(contract, limit: 10).claimed.count == 1)
        }
    }

    // The clock's readings are seconds since boot (SQLite, memory) or since the epoch
    // (PostgreSQL's fleet time, about 2e-7 s apart from one double to the next), and a token
    // due exactly now came to 0.99999... at some of them and was refused.
    @Test("a token due exactly at the claim's time is taken, at every reading of the clock", arguments: StoreKind.allCases)
    func dueTokenTakenOnTime(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit(Self.a, requestsPerSecond: 10, burst: 1)], now: contract.now)
            _ = try await contract.insert(Self.specs(Self.a, 41))
            #expect(try await Self.commit(contract, limit: 5).claimed.count == 1, "the burst of 1")
            var taken: [Int] = []
            for _ in 0..<40 {
                contract.clock.advance(by: .milliseconds(100))
                taken.append(try await Self.commit(contract, limit: 5).claimed.count)
            }
            #expect(taken == Array(repeating: 1, count: 40), "one token each tenth of a second: \(taken)")
        }
    }

    @Test("a rate limit holds across drainers: a burst, then a token per interval on the queue's clock; a concurrency cap too", arguments: StoreKind.allCases)
    func limits(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit(Self.a, requestsPerSecond: 4, burst: 2)], now: contract.now)
            _ = try await contract.insert(Self.specs(Self.a, 10) + Self.specs(Self.b, 2))
            let first = try await Self.commit(contract)
            #expect(first.claimed.filter { $0.url.hasPrefix(Self.a) }.count == 2, "the burst")
            #expect(first.claimed.filter { $0.url.hasPrefix(Self.b) }.count == 2, "another origin is not limited")
            let held = try #require(first.heldFor)
            #expect(held > .milliseconds(200) && held <= .milliseconds(250), "the next token in a quarter of a second")
            let metered = try await contract.storage.counts(now: contract.now)
            #expect(metered.due == 0 && metered.heldByFlow == 8, "entries a limit holds are not due: \(metered.due), \(metered.heldByFlow)")
            let other = try await contract.drainer()
            #expect(try await Self.commit(contract, other).claimed.isEmpty, "the bucket is the queue's, not the drainer's")
            contract.clock.advance(by: .milliseconds(300))
            #expect(try await Self.commit(contract, other).claimed.count == 1)
            contract.clock.advance(by: .seconds(5))
            #expect(try await Self.commit(contract).claimed.count == 2, "a lull refills the bucket to its burst, not beyond")
            let flows = try await other.originFlows()
            #expect(flows.map(\.origin) == [Self.a] && flows.first?.limit?.requestsPerSecond == 4 && flows.first?.inflight == 5)

            // A cap of 6 in flight, no rate: 5 are in flight, one more may go.
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit(Self.a, concurrency: 6)], now: contract.now)
            let capped = try await Self.commit(contract, other)
            #expect(capped.claimed.count == 1 && capped.heldFor == nil, "held by its cap: no time frees it, a settlement does")
            // Limits set by another drainer replace them: none left, no row.
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit(Self.b, concurrency: 1)], now: contract.now)
            #expect(try await other.originFlows().map(\.origin) == [Self.b])
            #expect(try await Self.commit(contract, other).claimed.count == 4, "the rest of the first origin, freed")
            await other.close()
        }
    }

    @Test("a pattern's limit is held by each origin it matches on its own, across drainers; an origin's own limit comes first", arguments: StoreKind.allCases)
    func patternLimits(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let pattern = try FlowControl.OriginLimit("https://*.p.test", requestsPerSecond: 4, burst: 2)
            try await contract.storage.storeOriginLimits([pattern, try FlowControl.OriginLimit("https://own.p.test", concurrency: 1)], now: contract.now)
            let x = "https://x.p.test", y = "https://a.y.p.test", own = "https://own.p.test"
            let apex = "https://p.test", port = "https://x.p.test:8443"
            _ = try await contract.insert([x, y, own, apex, port].flatMap { Self.specs($0, 4) })
            let first = try await Self.commit(contract, limit: 40)
            let taken = Dictionary(grouping: first.claimed) { FlowOrigin.key(ofURL: $0.url).map(String.init) ?? "" }.mapValues(\.count)
            #expect(taken == [x: 2, y: 2, own: 1, apex: 4, port: 4], "a bucket each, its own limit first, the apex and another port not matched: \(taken)")
            let held = try #require(first.heldFor)
            #expect(held > .milliseconds(200) && held <= .milliseconds(250))

            let other = try await contract.drainer()
            #expect(try await Self.commit(contract, other).claimed.isEmpty, "the derived buckets are the queue's, not the drainer's")
            contract.clock.advance(by: .milliseconds(300))
            let refilled = try await Self.commit(contract, other)
            #expect(refilled.claimed.map(\.url).filter { $0.hasPrefix(x + "/") }.count == 1 && refilled.claimed.count == 2, "a token each")
            let flows = try await other.originFlows()
            #expect(flows.map(\.origin) == ["https://*.p.test", y, own, x])
            let derived = try FlowControl.OriginLimit(x, requestsPerSecond: 4, burst: 2)
            #expect(flows.first { $0.origin == x }?.limit == derived)

            // A pause makes the row of an origin the pattern matches: it holds the pattern's limit.
            let late = "https://late.q.test"
            _ = try await contract.insert(Self.specs(late, 1))
            let lateEntry = try #require(try await Self.commit(contract, other).claimed.first { $0.url.hasPrefix(late) })
            try await contract.storage.storeOriginLimits([pattern, try FlowControl.OriginLimit("https://*.q.test", concurrency: 3)], now: contract.now)
            _ = try await Self.commit(contract, other, settling: [Self.settlement(lateEntry, Self.tooMany(after: .seconds(30)))], limit: 0)
            let lateFlow = try #require(try await other.originFlows().first { $0.origin == late })
            let lateLimit = try FlowControl.OriginLimit(late, concurrency: 3)
            #expect(lateFlow.pausedUntil != nil && lateFlow.limit == lateLimit)

            // Limits without the patterns: the rows they gave hold nothing more and go; a pause stays.
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit(own, concurrency: 1)], now: contract.now)
            let left = try await other.originFlows()
            #expect(left.map(\.origin) == [late, own] && left.first?.limit == nil && left.first?.pausedUntil != nil)
            await other.close()
        }
    }

    @Test("an origin pattern matches one label or more before its domain, at its scheme and port only")
    func patternMatching() throws {
        let pattern = "https://*.example.com"
        for origin in ["https://a.example.com", "https://a.b.example.com"] {
            #expect(OriginLimitTable.matches(pattern: pattern, origin: origin), "\(origin)")
        }
        for origin in ["https://example.com", "https://xexample.com", "http://a.example.com", "https://a.example.com:8443",
                       "https://a.example.com.evil", "https://u@a.example.com", "https://*.example.com"] {
            #expect(!OriginLimitTable.matches(pattern: pattern, origin: origin), "\(origin)")
        }
        #expect(OriginLimitTable.matches(pattern: "https://*.example.com:8443", origin: "https://a.example.com:8443"))
        let table = OriginLimitTable([
            try FlowControl.OriginLimit(pattern, requestsPerSecond: 1), try FlowControl.OriginLimit("https://*.api.example.com", requestsPerSecond: 2),
            try FlowControl.OriginLimit("https://own.api.example.com", requestsPerSecond: 3),
        ])
        #expect(table.limit(for: "https://a.example.com")?.requestsPerSecond == 1)
        #expect(table.limit(for: "https://v1.api.example.com")?.requestsPerSecond == 2, "the longer pattern")
        #expect(table.limit(for: "https://own.api.example.com")?.requestsPerSecond == 3, "its own limit")
        #expect(table.limit(for: "https://v1.api.example.com")?.origin == "https://v1.api.example.com")
    }

    @Test("a limit reads as it is written, and bad limits are refused with what is wrong")
    func limitText() throws {
        let limit = try FlowControl.OriginLimit(parsing: "https://api.example.com:8443=10/s,burst=5,concurrency=4")
        #expect(limit.origin == "https://api.example.com:8443" && limit.requestsPerSecond == 10 && limit.burst == 5 && limit.concurrency == 4)
        #expect(try FlowControl.OriginLimit(parsing: limit.text) == limit)
        #expect(try FlowControl.OriginLimit(parsing: "http://127.0.0.1:8080/=concurrency=2").origin == "http://127.0.0.1:8080")
        let pattern = try FlowControl.OriginLimit(parsing: "https://*.example.com:8443=2/s")
        #expect(pattern.isPattern && pattern.origin == "https://*.example.com:8443" && !limit.isPattern)
        for bad in ["https://a.*.test=1/s", "https://*=1/s", "https://x*.test=1/s", "https://*.*.test=1/s", "https://u@a.test=1/s", "https://a.test", "https://a.test/path=1/s", "ftp://a.test=1/s", "https://a.test=0/s", "https://a.test=1/s,burst=0", "https://a.test=fast"] {
            #expect(throws: QueueError.self, "\(bad)") { try FlowControl.OriginLimit(parsing: bad) }
        }
    }
}
