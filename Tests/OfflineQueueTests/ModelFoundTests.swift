import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// What the model check (Tests/QueueModel) found, each as the example that shows it, on every
/// store: the stores disagreed with each other or with the contract until these were fixed
/// (Docs/ModelCheck.md lists each with the shrunk program that found it).
@Suite("Store conformance: what the model check found")
struct ModelFoundTests {
    private static let delivered = EntryLifecycle.Transition.deliver(status: 200)
    private static let rejected = EntryLifecycle.Transition.deadLetter(.init(.rejected, status: 422, error: "HTTP 422"))

    @Test("an id given twice to a purge is one entry, purged once", arguments: StoreKind.allCases)
    func purgeTwice(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(), Spec(), Spec()])
            #expect(try await contract.storage.purge(.ids([ids[0], ids[0], ids[1]]), now: contract.now) == 2)
            #expect(try await contract.storage.counts(now: contract.now).total == 1)
        }
    }

    @Test("an older entry an operator retried while a newer one of its group is in flight waits for that one's settlement", arguments: StoreKind.allCases)
    func oneInFlightPerGroup(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(group: "g"), Spec(group: "g")])
            #expect(try await contract.claim().claimed.map(\.id) == [ids[0]])
            #expect(try await contract.claim(settling: [Settlement(id: ids[0], transition: Self.rejected)]).claimed.map(\.id) == [ids[1]])
            #expect(try await contract.storage.retry(ids: [ids[0]], now: contract.now) == [ids[0]])
            #expect(try await contract.claim().claimed.isEmpty, "the group's newer entry is in flight")
            #expect(try await contract.claim(settling: [Settlement(id: ids[1], transition: Self.delivered)]).claimed.map(\.id) == [ids[0]])
        }
    }

    @Test("the lapsed lease of a drainer that hangs goes back at the reclaim chore, its attempt kept", arguments: StoreKind.allCases)
    func lapsedLease(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let hung = try await contract.drainer()
            let id = try await contract.insert([Spec()])[0]
            #expect(try await contract.claim(hung, lease: .seconds(5)).claimed.map(\.id) == [id])
            contract.clock.advance(by: .seconds(10))
            #expect(try await contract.claim(reclaim: false).claimed.isEmpty, "without the chore, a lapsed lease stays")
            _ = try await contract.storage.pause(group: nil, now: contract.now)
            _ = try await contract.claim(reclaim: true)
            let entry = try #require(try await contract.storage.entry(id, now: contract.now))
            #expect(entry.state == .pending && entry.lastAttemptAt != nil, "the attempt it started stays recorded")
            _ = try await contract.storage.resume(group: nil, now: contract.now)
            #expect(try await contract.claim().claimed.map(\.id) == [id])
            #expect(try await contract.settle([Settlement(id: id, transition: Self.delivered)], by: hung) == [id], "the hung drainer's settlement is lost")
            await hung.close()
        }
    }

    @Test("a replacement waiting behind an edit in flight links its own parents under its own policy", arguments: StoreKind.allCases)
    func replacementLinkPolicy(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            func edit(_ key: String, after: [EntryID] = [], policy: ParentDeathPolicy = .die) -> NewEntry {
                var entry = Spec(key: key, after: after, whenParentDies: policy).entry
                entry.coalescingKey = "note"
                return entry
            }
            let sending = try await contract.storage.insert([edit("v1")], now: contract.now)[0].id
            #expect(try await contract.claim(limit: 1).claimed.map(\.id) == [sending])
            let waiting = try await contract.storage.insert([edit("v2")], now: contract.now)[0].id
            let parent = try await contract.insert([Spec(key: "parent")])[0]
            // v3 takes v2's place, and waits for `parent` too, under `wait`.
            #expect(try await contract.storage.insert([edit("v3", after: [parent], policy: .wait)], now: contract.now)[0].id == waiting)
            // v1 is settled and `parent` dies: v3 waits for `parent`'s retry, as its policy says.
            let claimed = try await contract.claim(settling: [Settlement(id: sending, transition: Self.delivered)]).claimed.map(\.id)
            #expect(claimed == [parent])
            _ = try await contract.settle([Settlement(id: parent, transition: Self.rejected)])
            #expect(try await contract.storage.entry(waiting, now: contract.now)?.state == .blocked)
            #expect(try await contract.storage.dependencies(of: waiting).parents == [sending, parent])
        }
    }

    @Test("a retry by id leaves a superseded entry (never to be sent) and a blocked one as they are", arguments: StoreKind.allCases)
    func retrySuperseded(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            var first = Spec(key: "v1").entry
            first.coalescingKey = "note"
            var second = Spec(key: "v2").entry
            second.coalescingKey = "note"
            let id = try await contract.storage.insert([first], now: contract.now)[0].id
            let superseded = try #require(try await contract.storage.insert([second], now: contract.now)[0].superseded)
            let parent = try await contract.insert([Spec(key: "parent")])[0]
            let child = try await contract.insert([Spec(key: "child", after: [parent])])[0]
            #expect(try await contract.storage.retry(ids: [superseded, child, id], now: contract.now) == [superseded, child, id])
            #expect(try await contract.storage.entry(superseded, now: contract.now)?.state == .superseded)
            #expect(try await contract.storage.entry(child, now: contract.now)?.state == .blocked)
            #expect(Set(try await contract.claim().claimed.map(\.id)) == [id, parent], "the superseded request is not sent")
        }
    }

    @Test("the network's return wakes the entries waiting for it, not one in flight", arguments: StoreKind.allCases)
    func networkWaitersInFlight(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(), Spec()])
            #expect(try await contract.claim().claimed.count == 2)
            let gone = EntryLifecycle.Transition.retry(.init(after: .seconds(30), consumesAttempt: false, waitingForNetwork: true, error: "offline"))
            _ = try await contract.settle(ids.map { Settlement(id: $0, transition: gone) })
            contract.clock.advance(by: .seconds(31))
            #expect(try await contract.claim(limit: 1).claimed.map(\.id) == [ids[0]], "due again after the recheck")
            #expect(try await contract.storage.wakeNetworkWaiters(now: contract.now) == 1, "the one in flight is not woken")
            #expect(try await contract.storage.entry(ids[1], now: contract.now)?.waitingForNetwork == false)
        }
    }

    @Test("a claim's heldFor counts only the origins it passed entries over for; a passed pause is not shown", arguments: StoreKind.allCases)
    func heldForItsOwnOrigins(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let paused = try await contract.insert([Spec(url: "https://paused.test/a")])[0]
            #expect(try await contract.claim().claimed.map(\.id) == [paused])
            let busy = EntryLifecycle.Transition.retry(.init(after: .seconds(60), consumesAttempt: false, status: 429, error: "HTTP 429", originPause: .seconds(30)))
            _ = try await contract.settle([Settlement(id: paused, transition: busy, url: "https://paused.test/a")])
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit("https://capped.test", concurrency: 1)], now: contract.now)
            let capped = try await contract.insert([Spec(url: "https://capped.test/1"), Spec(url: "https://capped.test/2")])
            let result = try await contract.claim()
            #expect(result.claimed.map(\.id) == [capped[0]])
            #expect(result.heldFor == nil, "held by a concurrency cap alone, not by the other origin's pause: \(String(describing: result.heldFor))")
            #expect(try await contract.storage.originFlows(now: contract.now).map(\.origin) == ["https://capped.test", "https://paused.test"])
            contract.clock.advance(by: .seconds(31))
            #expect(try await contract.storage.originFlows(now: contract.now).map(\.origin) == ["https://capped.test"], "the passed pause holds nothing")
        }
    }

    @Test("after a reboot, an entry retried by id or by a selection is taken by a drain that tries each entry once: an attempt read on the old boot's clock is void")
    func retriedAfterARebootIsTakenOnce() async throws {
        let contract = try await Contract(.sqlite)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(url: "https://a.test/1"), Spec(url: "https://a.test/2")])
            #expect(try await contract.claim(limit: 2).claimed.count == 2)
            contract.clock.advance(by: .seconds(100))
            let dead = EntryLifecycle.Transition.deadLetter(.init(.rejected, status: 400, error: "HTTP 400"))
            _ = try await contract.settle(ids.map { Settlement(id: $0, transition: dead, url: "https://a.test/x") })
            contract.clock.reboot(uptime: 5)
            _ = try await contract.storage.retry(ids: [ids[0]], now: contract.now)
            _ = try await contract.storage.change(.retry, matching: EntrySelection(states: [.dead]), now: contract.now, dryRun: false)
            // A drain started now that tries each entry once: both are due, neither attempted on this boot.
            let claimed = try await contract.claim(limit: 4, since: contract.now.uptime).claimed.map(\.id)
            #expect(Set(claimed) == Set(ids), "claimed \(claimed)")
        }
    }

    @Test("an origin named twice in the limits takes the last limit, its bucket full", arguments: StoreKind.allCases)
    func lastLimitForAnOriginWins(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            try await contract.storage.storeOriginLimits([
                try FlowControl.OriginLimit("https://a.test", requestsPerSecond: 2, burst: 1, concurrency: 2),
                try FlowControl.OriginLimit("https://a.test", requestsPerSecond: 10, burst: 3, concurrency: 3),
            ], now: contract.now)
            #expect(try await contract.storage.originFlows(now: contract.now).map(\.limit) == [try FlowControl.OriginLimit("https://a.test", requestsPerSecond: 10, burst: 3, concurrency: 3)])
            _ = try await contract.insert((0..<4).map { Spec(url: "https://a.test/\($0)") })
            // A full bucket of the last limit's 3, not the first's 1.
            #expect(try await contract.claim(limit: 4).claimed.count == 3)
        }
    }

    @Test("retention keeps a delivered parent a child not yet sent reads, and only that one", arguments: StoreKind.allCases)
    func retentionKeepsWhatIsRead(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            var kept = Spec(key: "read").entry
            kept.keepResponse = ResponseKeeping()
            let read = try await contract.storage.insert([kept], now: contract.now)[0].id
            let other = try await contract.insert([Spec(key: "other")])[0]
            var child = Spec(key: "child", after: [other, read]).entry
            child.references = [ResponseReference(entry: read, part: .status)]
            let waiting = try await contract.storage.insert([child], now: contract.now)[0].id
            #expect(Set(try await contract.claim().claimed.map(\.id)) == [read, other])
            _ = try await contract.settle([
                Settlement(id: read, transition: Self.delivered, kept: StoredResponse(bytes: KeptResponse(status: 200).encoded, keyID: nil)),
                Settlement(id: other, transition: Self.delivered),
            ])
            #expect(try await contract.storage.entry(waiting, now: contract.now)?.state == .pending)
            // A day ahead, as the other retention tests: PostgreSQL stamps a delivery with the
            // fleet's time, which the runner's wall clock does not move (beside the whole suite,
            // one run took 107 s, and a cutoff 10 s ahead of the wall clock kept both parents).
            let removed = try await contract.storage.deleteDelivered(finishedBefore: contract.now.wall.addingTimeInterval(86_400))
            #expect(removed.deletedEntries == 1, "the parent the child does not read goes")
            #expect(try await contract.storage.entry(other, now: contract.now) == nil)
            #expect(try await contract.storage.entry(read, now: contract.now)?.state == .delivered)
        }
    }

    @Test("a claim puts an open circuit's probe first, before the entries the walk takes, whatever their ids", arguments: StoreKind.allCases)
    func probeFirst(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            try await contract.storage.storeOriginLimits([try FlowControl.OriginLimit("https://a.test", openAfter: 1)], now: contract.now)
            // b.test's entry waits a second, so only a.test's is claimed at first.
            let later = contract.now.wall.addingTimeInterval(1)
            let other = try await contract.insert([Spec(notBefore: later, url: "https://b.test/1")])[0]
            let unwell = try await contract.insert([Spec(url: "https://a.test/2")])[0]
            #expect(try await contract.claim(limit: 1).claimed.map(\.id) == [unwell])
            let failed = Settlement(id: unwell, transition: .retry(.init(after: .seconds(1), status: 502, error: "HTTP 502")), url: "https://a.test/2")
            #expect(try await contract.claim(settling: [failed], limit: 0).opened == ["https://a.test"])
            contract.clock.advance(by: .seconds(2))
            let claim = try await contract.claim(limit: 4)
            #expect(claim.probes == [unwell])
            #expect(claim.claimed.map(\.id) == [unwell, other], "the probe first")
        }
    }
}
