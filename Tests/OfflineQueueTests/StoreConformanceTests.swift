import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// The storage contract's definition: one suite, run against every store (SQLite, PostgreSQL,
/// memory), that drives ``QueueStorage`` directly, as the engine does, on an injected clock.
/// What passes here on one store passes on all; a store that differs fails here first.
@Suite("Store conformance: the storage contract, on every store")
struct StoreConformanceTests {
    // MARK: - Claims

    @Test("a claim takes the highest priority first, then the oldest, up to its limit", arguments: StoreKind.allCases)
    func claimOrder(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([0, 5, 0, 5, 1].map { Spec(priority: $0) })
            let first = try await contract.claim(limit: 2)
            #expect(first.claimed.map(\.id) == [ids[1], ids[3]])
            let rest = try await contract.claim(limit: 10)
            #expect(rest.claimed.map(\.id) == [ids[4], ids[0], ids[2]])
            #expect(try await contract.claim().claimed.isEmpty, "everything is claimed")
            let entry = try #require(first.claimed.first)
            #expect(entry.state == .inflight && entry.leaseOwner == contract.first.store.owner)
            #expect(entry.method == "POST" && entry.url.hasSuffix("/k0-2") && entry.headers == [StoredHeader(name: "X-Key", value: "k0-2")])
        }
    }

    @Test("an entry's trace context comes back as stored from a claim, a lookup and a listing; an entry without one has none", arguments: StoreKind.allCases)
    func traceContexts(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let full = try TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
            let bare = try TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
            let ids = try await contract.insert([Spec(traceContext: full), Spec(traceContext: bare), Spec()])
            let claimed = try await contract.claim().claimed
            #expect(claimed.map(\.traceContext) == [full, bare, nil])
            #expect(try await contract.storage.entry(ids[0], now: contract.now)?.traceContext == full)
            let listed = try await contract.storage.entries(EntryFilter(), now: contract.now)
            #expect(listed.map(\.traceContext) == [full, bare, nil])
            #expect(listed[0].traceContext?.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && listed[0].headers == [StoredHeader(name: "X-Key", value: "k0-1")])
        }
    }

    @Test("a group's entries go one at a time in order: an open head (pending, backing off, in flight) holds the rest; a dead one does not", arguments: StoreKind.allCases)
    func fifoGroups(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(group: "a"), Spec(group: "a"), Spec(group: "a"), Spec(group: "b"), Spec(), Spec(group: "a", priority: 9)])
            let (a1, a2, a3, b1, free, urgent) = (ids[0], ids[1], ids[2], ids[3], ids[4], ids[5])
            #expect(try await contract.claim().claimed.map(\.id) == [a1, b1, free], "a later entry of a group waits, whatever its priority")
            // The head backs off: the rest of its group still waits.
            _ = try await contract.claim(settling: [Settlement(id: a1, transition: .retry(.init(after: .seconds(10), error: "HTTP 503")))])
            #expect(try await contract.claim().claimed.isEmpty)
            contract.clock.advance(by: .seconds(11))
            #expect(try await contract.claim().claimed.map(\.id) == [a1])
            _ = try await contract.claim(settling: [Settlement(id: a1, transition: .deliver(status: 200))], limit: 0)
            #expect(try await contract.claim().claimed.map(\.id) == [a2])
            let dead = EntryLifecycle.Transition.deadLetter(.init(.rejected, status: 422, error: "HTTP 422"))
            #expect(try await contract.claim(settling: [Settlement(id: a2, transition: dead)]).claimed.map(\.id) == [a3], "a dead entry no longer holds its group")
            _ = try await contract.settle([Settlement(id: a3, transition: .deliver(status: 200))])
            #expect(try await contract.claim().claimed.map(\.id) == [urgent])
        }
    }

    @Test("an entry given a start later is not claimed before it; released entries are due again at once", arguments: StoreKind.allCases)
    func dueTimes(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(notBefore: contract.now.wall.addingTimeInterval(60)), Spec()])
            let claimed = try await contract.claim()
            #expect(claimed.claimed.map(\.id) == [ids[1]])
            let counts = try await contract.storage.counts(now: contract.now)
            #expect(counts.pending == 1 && counts.inflight == 1 && counts.due == 0 && counts.inflightHere == 1)
            #expect(counts.nextDue.map { abs($0.uptime - (contract.now.uptime + 60)) < 0.01 } == true, "\(String(describing: counts.nextDue))")
            // Released (a stopped drain): pending and due now, nothing counted.
            let released = try await contract.claim(settling: [Settlement(id: ids[1], transition: .release)])
            #expect(released.lost.isEmpty && released.claimed.map(\.id) == [ids[1]])
            #expect(released.claimed.first?.attempts == 0)
            contract.clock.advance(by: .seconds(61))
            #expect(try await contract.claim().claimed.map(\.id) == [ids[0]])
        }
    }

    @Test("a drain that tries each entry once skips those attempted since it began", arguments: StoreKind.allCases)
    func attemptedSince(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec()])
            // The drain began a moment before its first claim.
            let began = contract.now.uptime - 0.001
            _ = try await contract.claim(since: began)
            contract.clock.advance(by: .seconds(1))
            let again = try await contract.claim(settling: [Settlement(id: ids[0], transition: .retry(.init(after: .zero, error: "HTTP 500")))], since: began)
            #expect(again.claimed.isEmpty, "attempted since the drain began")
            #expect(try await contract.claim().claimed.map(\.id) == ids, "another drain takes it")
        }
    }

    // MARK: - Leases and owners

    @Test("a lease keeps other drainers off until it lapses on the boot clock; a renewal extends it; the late settlement is lost", arguments: StoreKind.allCases)
    func leases(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let other = try await contract.drainer()
            let ids = try await contract.insert([Spec()])
            #expect(try await contract.claim(lease: .seconds(30)).claimed.map(\.id) == ids)
            #expect(try await contract.claim(other).claimed.isEmpty, "held by the first drainer")
            contract.clock.advance(by: .seconds(20))
            try await contract.storage.renewLeases(ids, now: contract.now, lease: .seconds(30))
            try await other.store.renewLeases(ids, now: contract.now, lease: .seconds(3600))   // not its own: changes nothing
            contract.clock.advance(by: .seconds(20))
            contract.clock.stepWall(by: .seconds(7200))   // a wall-clock step lapses nothing
            #expect(try await contract.claim(other).claimed.isEmpty, "renewed: 20 s of 30 gone")
            contract.clock.advance(by: .seconds(15))
            let taken = try await contract.claim(other)
            #expect(taken.claimed.map(\.id) == ids, "lapsed: another drainer takes it")
            #expect(taken.claimed.first?.leaseOwner == other.store.owner)
            // The first drainer's result comes late: not recorded.
            #expect(try await contract.settle([Settlement(id: ids[0], transition: .deliver(status: 200))]) == Set(ids))
            #expect(try await contract.storage.entry(ids[0], now: contract.now)?.state == .inflight)
            #expect(try await contract.settle([Settlement(id: ids[0], transition: .deliver(status: 201))], by: other).isEmpty)
            let entry = try #require(try await contract.storage.entry(ids[0], now: contract.now))
            #expect(entry.state == .delivered && entry.attempts == 1 && entry.lastStatus == 201 && entry.leaseOwner == nil)
        }
    }

    @Test("a settlement is recorded once: again, or by a drainer that holds no claim, or of an entry never claimed, it is lost and changes nothing", arguments: StoreKind.allCases)
    func exactlyOnceSettle(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let other = try await contract.drainer()
            let ids = try await contract.insert([Spec(), Spec()])
            _ = try await contract.claim(limit: 1)
            let retry = EntryLifecycle.Transition.retry(.init(after: .seconds(5), status: 503, error: "HTTP 503", excerpt: "busy"))
            #expect(try await contract.settle([Settlement(id: ids[0], transition: .deliver(status: 200))], by: other) == [ids[0]], "not its claim")
            #expect(try await contract.settle([Settlement(id: ids[1], transition: retry)]) == [ids[1]], "never claimed")
            #expect(try await contract.settle([Settlement(id: ids[0], transition: retry)]).isEmpty)
            #expect(try await contract.settle([Settlement(id: ids[0], transition: .deliver(status: 200))]) == [ids[0]], "settled already")
            let entry = try #require(try await contract.storage.entry(ids[0], now: contract.now))
            #expect(entry.state == .pending && entry.attempts == 1 && entry.lastStatus == 503 && entry.lastError == "HTTP 503")
            #expect(entry.responseExcerpt == "busy" && entry.lastAttemptAt != nil)
            #expect(entry.nextDue.map { abs($0.uptime - (contract.now.uptime + 5)) < 0.01 } == true)
            let untouched = try #require(try await contract.storage.entry(ids[1], now: contract.now))
            #expect(untouched.state == .pending && untouched.attempts == 0 && untouched.lastError == nil)
        }
    }

    @Test("the entries of a drainer that is gone are counted orphaned and taken back by the next claim, nothing counted", arguments: StoreKind.allCases)
    func ownerLiveness(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            var gone: OfflineQueue? = try await contract.drainer()
            let ids = try await contract.insert([Spec(), Spec()])
            let goneOwner = gone!.store.owner
            let held = try await contract.claim(gone!, lease: .seconds(3600))
            #expect(held.claimed.count == 2)
            let before = try await contract.storage.counts(now: contract.now)
            #expect(before.inflight == 2 && before.inflightOrphaned == 0 && before.drainers == [goneOwner] && before.inflightHere == 0)
            #expect(try await contract.claim(reclaim: true).reclaimed == 0, "it lives")
            // Its process ends: the hold dies with it (the lease, an hour long, has not lapsed).
            await gone?.close()
            gone = nil
            #expect(await eventually { (try? await contract.storage.counts(now: contract.now).inflightOrphaned) == 2 })
            let taken = try await contract.claim(reclaim: true)
            #expect(taken.reclaimed == 2)
            #expect(taken.claimed.map(\.id) == ids)
            for entry in taken.claimed { #expect(entry.attempts == 0) }
            let entry = try #require(try await contract.storage.entry(ids[0], now: contract.now))
            #expect(entry.lastError?.contains("a drainer that is gone") == true, "\(String(describing: entry.lastError))")
        }
    }

    // MARK: - Outcomes

    @Test("a dead letter keeps its reason, status and excerpt, is never claimed, and a retry of the dead gives it a fresh budget", arguments: StoreKind.allCases)
    func deadLetters(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(), Spec()])
            _ = try await contract.claim()
            _ = try await contract.settle([
                Settlement(id: ids[0], transition: .deadLetter(.init(.rejected, status: 422, error: "HTTP 422", excerpt: "{\"error\":1}"))),
                Settlement(id: ids[1], transition: .deadLetter(.init(.expired, consumesAttempt: false, error: "older than the maximum age"))),
            ])
            let rejected = try #require(try await contract.storage.entry(ids[0], now: contract.now))
            #expect(rejected.state == .dead && rejected.deadReason == .rejected && rejected.lastStatus == 422 && rejected.attempts == 1)
            #expect(rejected.responseExcerpt == "{\"error\":1}" && rejected.finishedAt != nil && rejected.nextDue == nil)
            let expired = try #require(try await contract.storage.entry(ids[1], now: contract.now))
            #expect(expired.deadReason == .expired && expired.attempts == 0 && expired.lastStatus == nil)
            contract.clock.advance(by: .seconds(3600))
            #expect(try await contract.claim().claimed.isEmpty)
            #expect(try await contract.storage.counts(now: contract.now).dead == 2)
            #expect(try await contract.storage.retry(ids: nil, now: contract.now) == ids)
            let revived = try #require(try await contract.storage.entry(ids[0], now: contract.now))
            #expect(revived.state == .pending && revived.attempts == 0 && revived.finishedAt == nil)
            #expect(revived.deadReason == nil, "a retried entry is no longer dead, nor is its reason kept")
            #expect(abs(revived.budgetUptime - contract.now.uptime) < 0.01, "a fresh budget, from now on the boot clock")
            #expect(try await contract.claim().claimed.map(\.id) == ids)
        }
    }

    @Test("entries waiting only for the network are due at once when it is back, their budget untouched", arguments: StoreKind.allCases)
    func networkWaiters(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(), Spec()])
            _ = try await contract.claim()
            let gone = EntryLifecycle.Transition.retry(.init(after: .seconds(3600), consumesAttempt: false, waitingForNetwork: true, error: "no route"))
            _ = try await contract.settle([Settlement(id: ids[0], transition: gone), Settlement(id: ids[1], transition: .retry(.init(after: .seconds(3600), error: "HTTP 500")))])
            #expect(try await contract.storage.entry(ids[0], now: contract.now)?.waitingForNetwork == true)
            #expect(try await contract.claim().claimed.isEmpty)
            #expect(try await contract.storage.wakeNetworkWaiters(now: contract.now) == 1)
            let woken = try await contract.claim()
            #expect(woken.claimed.map(\.id) == [ids[0]])
            #expect(woken.claimed.first?.attempts == 0 && woken.claimed.first?.waitingForNetwork == false)
        }
    }

    // MARK: - Enqueue

    @Test("an idempotency key is stored once: a second insert, in the same batch or later, points at the first entry; ids are never reused", arguments: StoreKind.allCases)
    func deduplication(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let tickets = try await contract.storage.insert([Spec(key: "same").entry, Spec(key: "same").entry, Spec(key: "other").entry], now: contract.now)
            #expect(tickets.map(\.deduplicated) == [false, true, false])
            #expect(tickets[0].id == tickets[1].id && tickets[2].id > tickets[0].id)
            let again = try await contract.storage.insert([Spec(key: "same").entry], now: contract.now)
            #expect(again == [Ticket(id: tickets[0].id, idempotencyKey: "same", deduplicated: true)])
            #expect(try await contract.storage.entry(idempotencyKey: "same", now: contract.now)?.id == tickets[0].id)
            #expect(try await contract.storage.counts(now: contract.now).pending == 2)
            // Purged, the key is free again, under a new id.
            #expect(try await contract.storage.purge(.ids([tickets[0].id, tickets[2].id]), now: contract.now) == 2)
            let fresh = try await contract.storage.insert([Spec(key: "same").entry], now: contract.now)
            #expect(fresh[0].deduplicated == false && fresh[0].id > tickets[2].id)
        }
    }

    @Test("a body kept apart streams back whole at replay, goes with its entry, and one never inserted is discarded", arguments: StoreKind.allCases)
    func bodies(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let payload = Data((0..<300_000).map { UInt8($0 % 251) })
            let stored = try await contract.storage.storeBody(ByteStream(data: payload))
            guard case .file(let name, let length) = stored else { Issue.record("expected a body kept apart, got \(stored)"); return }
            #expect(length == payload.count)
            var spec = Spec().entry
            spec.body = stored
            let ticket = try await contract.storage.insert([spec], now: contract.now)[0]
            let claimed = try #require(try await contract.claim().claimed.first)
            #expect(claimed.body == stored)
            let replayed = try await contract.storage.replayBody(stored).collect(upTo: 1 << 20)
            #expect(replayed == payload)
            #expect(try await contract.storage.replayBody(.inline(Data("small".utf8))).collect(upTo: 100) == Data("small".utf8))
            let unused = try await contract.storage.storeBody(ByteStream(data: Data(repeating: 1, count: 10)))
            guard case .file(let unusedName, _) = unused else { Issue.record("expected a body kept apart"); return }
            await contract.storage.discardBodies([unused])
            #expect(try await !contract.place.bodyExists(unusedName))
            try await contract.storage.sweepOrphanBodies()
            #expect(try await contract.place.bodyExists(name), "referenced: never swept")
            _ = try await contract.settle([Settlement(id: ticket.id, transition: .deliver(status: 200))])
            #expect(try await contract.storage.purge(.ids([ticket.id]), now: contract.now) == 1)
            #expect(try await !contract.place.bodyExists(name))
            #expect(try await contract.storage.integrityCheck() == ["ok"])
        }
    }

    // MARK: - Operators

    @Test("retry and purge by id: a missing entry or one in flight under a live drainer refuses the whole call; delivered entries are not retried", arguments: StoreKind.allCases)
    func retryAndPurgeByID(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(), Spec(), Spec()])
            let (delivered, dead, held) = (ids[0], ids[1], ids[2])
            _ = try await contract.claim(limit: 2)
            _ = try await contract.settle([
                Settlement(id: delivered, transition: .deliver(status: 200)),
                Settlement(id: dead, transition: .deadLetter(.init(.rejected, status: 400, error: "HTTP 400"))),
            ])
            _ = try await contract.claim()
            await #expect(throws: QueueError.entryInFlight(held)) { try await contract.storage.retry(ids: [dead, held], now: contract.now) }
            await #expect(throws: QueueError.noSuchEntry(999_999)) { try await contract.storage.retry(ids: [dead, 999_999], now: contract.now) }
            #expect(try await contract.storage.entry(dead, now: contract.now)?.state == .dead, "nothing changed")
            #expect(try await contract.storage.retry(ids: [delivered, dead], now: contract.now) == [delivered, dead])
            #expect(try await contract.storage.entry(delivered, now: contract.now)?.state == .delivered, "left alone")
            #expect(try await contract.storage.entry(dead, now: contract.now)?.state == .pending)
            await #expect(throws: QueueError.entryInFlight(held)) { try await contract.storage.purge(.ids([dead, held]), now: contract.now) }
            await #expect(throws: QueueError.noSuchEntry(999_999)) { try await contract.storage.purge(.ids([dead, 999_999]), now: contract.now) }
            #expect(try await contract.storage.entry(dead, now: contract.now) != nil, "nothing purged")
            #expect(try await contract.storage.purge(.states([.inflight], finishedBefore: nil), now: contract.now) == 0, "in flight: never by state")
            #expect(try await contract.storage.purge(.states([.delivered], finishedBefore: contract.now.wall.addingTimeInterval(-3600)), now: contract.now) == 0)
            #expect(try await contract.storage.purge(.states([.delivered, .pending], finishedBefore: nil), now: contract.now) == 2)
            #expect(try await contract.storage.entries(EntryFilter(), now: contract.now).map(\.id) == [held])
        }
    }

    @Test("bulk retry and purge match state, group, status, age and URL prefix in one step, skip what is held, and a dry run changes nothing", arguments: StoreKind.allCases)
    func bulkChanges(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(group: "g", path: "/api/a"), Spec(path: "/api/b"), Spec(path: "/other"), Spec(), Spec()])
            _ = try await contract.claim(limit: 4, lease: .seconds(3600))
            _ = try await contract.settle([
                Settlement(id: ids[0], transition: .deadLetter(.init(.attemptsExhausted, status: 503, error: "HTTP 503"))),
                Settlement(id: ids[1], transition: .deadLetter(.init(.rejected, status: 404, error: "HTTP 404"))),
                Settlement(id: ids[2], transition: .deadLetter(.init(.attemptsExhausted, status: 500, error: "HTTP 500"))),
            ])
            // ids[3] stays in flight under this drainer; ids[4] is pending.
            let fiveHundreds = EntrySelection(status: 500...599)
            let preview = try await contract.storage.change(.retry, matching: fiveHundreds, now: contract.now, dryRun: true)
            #expect(preview.dryRun && preview.ids == [ids[0], ids[2]] && preview.entries.map(\.id) == [ids[0], ids[2]])
            #expect(try await contract.storage.entry(ids[0], now: contract.now)?.state == .dead, "a dry run changes nothing")
            let prefixed = try await contract.storage.change(.retry, matching: EntrySelection(urlPrefix: "https://example.test/api/"), now: contract.now, dryRun: false)
            #expect(prefixed.ids == [ids[0], ids[1]] && !prefixed.dryRun)
            #expect(try await contract.storage.entry(ids[1], now: contract.now)?.state == .pending)
            let all = try await contract.storage.change(.retry, matching: EntrySelection(states: [.pending, .inflight]), now: contract.now, dryRun: false)
            #expect(all.skipped == [ids[3]], "in flight: skipped")
            #expect(try await contract.storage.change(.retry, matching: EntrySelection(group: "g"), now: contract.now, dryRun: false).ids == [ids[0]])
            // Age on the wall clock of the stored times.
            #expect(try await contract.storage.change(.purge, matching: EntrySelection(olderThan: .seconds(60)), now: contract.now, dryRun: false).ids.isEmpty)
            contract.clock.advance(by: .seconds(120))
            let dry = try await contract.storage.change(.purge, matching: EntrySelection(olderThan: .seconds(60)), now: contract.now, dryRun: true)
            #expect(dry.ids == [ids[0], ids[1], ids[2], ids[4]] && dry.skipped == [ids[3]])
            let purged = try await contract.storage.change(.purge, matching: EntrySelection(states: [.dead, .pending]), now: contract.now, dryRun: false)
            #expect(purged.ids == [ids[0], ids[1], ids[2], ids[4]] && purged.skipped.isEmpty)
            #expect(try await contract.storage.change(.purge, matching: EntrySelection(), now: contract.now, dryRun: false).skipped == [ids[3]])
        }
    }

    @Test("a pause of the queue or of a group holds back what it covers from every drainer, counts it, and a resume lifts it alone", arguments: StoreKind.allCases)
    func pauses(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let other = try await contract.drainer()
            let ids = try await contract.insert([Spec(group: "a"), Spec(group: "b"), Spec()])
            #expect(try await contract.storage.pause(group: nil, now: contract.now))
            #expect(try await contract.storage.pause(group: nil, now: contract.now) == false, "paused already")
            #expect(try await contract.storage.pause(group: "a", now: contract.now))
            let status = try await contract.storage.pauseStatus(now: contract.now)
            #expect(status.pauses.map(\.group) == [nil, "a"] && status.pendingHeld == 3)
            #expect(try await contract.claim(other).claimed.isEmpty)
            let counts = try await contract.storage.counts(now: contract.now)
            #expect(counts.due == 0 && counts.nextDue == nil && counts.pending == 3)
            #expect(try await contract.storage.resume(group: nil, now: contract.now))
            #expect(try await contract.storage.resume(group: nil, now: contract.now) == false)
            #expect(try await other.store.pauseStatus(now: contract.now).pendingHeld == 1)
            #expect(try await contract.storage.counts(now: contract.now).due == 2)
            #expect(try await contract.claim(other).claimed.map(\.id) == [ids[1], ids[2]])
            #expect(try await contract.storage.resume(group: "a", now: contract.now))
            #expect(try await contract.storage.pauseStatus(now: contract.now) == PauseStatus())
            #expect(try await contract.claim().claimed.map(\.id) == [ids[0]])
        }
    }

    @Test("the due count: an entry given a wait, in flight or held by a paused group is not due; one due from its start or retried is, behind its group's head or not", arguments: StoreKind.allCases)
    func dueCounts(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let storage = contract.storage
            // A drain's start, as a drain makes it (SQLite then knows every open row is on this boot).
            _ = try await storage.settleAndClaim([], now: contract.now, claimLimit: 0, lease: .seconds(60), attemptedSince: nil, chores: ClaimChores(carryOver: true))
            let ids = try await contract.insert([
                Spec(group: "a"), Spec(group: "a"), Spec(group: "b"), Spec(), Spec(notBefore: contract.now.wall.addingTimeInterval(60)), Spec(),
            ])
            let (a1, b1, scheduled) = (ids[0], ids[2], ids[4])
            var counts = try await storage.counts(now: contract.now)
            #expect(counts.pending == 6 && counts.due == 5)
            #expect(try await contract.claim(limit: 2, lease: .seconds(600)).claimed.map(\.id) == [a1, b1])
            counts = try await storage.counts(now: contract.now)
            #expect(counts.pending == 4 && counts.inflight == 2 && counts.due == 3, "a1's follower is due, though not claimable yet")
            _ = try await contract.settle([Settlement(id: a1, transition: .retry(.init(after: .seconds(10), error: "HTTP 503")))])
            counts = try await storage.counts(now: contract.now)
            #expect(counts.pending == 5 && counts.inflight == 1 && counts.due == 3, "a1 waits its backoff")
            #expect(try await storage.pause(group: "a", now: contract.now))
            #expect(try await storage.pause(group: "b", now: contract.now))
            counts = try await storage.counts(now: contract.now)
            #expect(counts.pending == 5 && counts.inflight == 1 && counts.due == 2, "group a's two held, b's in flight")
            #expect(try await storage.pauseStatus(now: contract.now).pendingHeld == 2, "a1 and a2; b1 is in flight")
            contract.clock.advance(by: .seconds(61))
            #expect(try await storage.counts(now: contract.now).due == 3, "the scheduled entry is due; a1 is, but held")
            #expect(try await storage.retry(ids: [scheduled], now: contract.now) == [scheduled])
            #expect(try await storage.counts(now: contract.now).due == 3, "retried: due from now")
            #expect(try await storage.resume(group: "a", now: contract.now))
            #expect(try await storage.resume(group: "b", now: contract.now))
            counts = try await storage.counts(now: contract.now)
            #expect(counts.pending == 5 && counts.inflight == 1 && counts.due == 5)
            _ = try await contract.settle([Settlement(id: b1, transition: .deliver(status: 200))])
            counts = try await storage.counts(now: contract.now)
            #expect(counts.pending == 5 && counts.inflight == 0 && counts.delivered == 1 && counts.due == 5)
        }
    }

    @Test("counts and listings: states, the oldest pending, the last delivery, entries by state, group and page, oldest first", arguments: StoreKind.allCases)
    func countsAndListings(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let start = contract.now.wall
            let ids = try await contract.insert([Spec(group: "g"), Spec(), Spec(group: "g"), Spec()])
            _ = try await contract.claim(limit: 2)
            contract.clock.advance(by: .seconds(5))
            _ = try await contract.settle([
                Settlement(id: ids[0], transition: .deliver(status: 204)),
                Settlement(id: ids[1], transition: .deadLetter(.init(.unsendable, error: "bad template"))),
            ])
            _ = try await contract.claim(limit: 1)
            let counts = try await contract.storage.counts(now: contract.now)
            #expect(counts.pending == 1 && counts.inflight == 1 && counts.delivered == 1 && counts.dead == 1 && counts.due == 1)
            #expect(counts.inflightHere == 1 && counts.drainers == [contract.first.store.owner] && counts.inflightOrphaned == 0)
            #expect(counts.oldestPendingCreatedAt == (try await contract.storage.entry(ids[3], now: contract.now)?.createdAt))
            #expect(counts.lastDeliveredAt.map { abs($0.timeIntervalSince(start.addingTimeInterval(5))) < 1 } == true)
            let storage = contract.storage
            let now = contract.now
            #expect(try await storage.entries(EntryFilter(), now: now).map(\.id) == ids)
            #expect(try await storage.entries(EntryFilter(states: [.inflight]), now: now).map(\.id) == [ids[2]])
            #expect(try await storage.entries(EntryFilter(states: [.delivered, .dead]), now: now).map(\.id) == [ids[0], ids[1]])
            #expect(try await storage.entries(EntryFilter(group: "g"), now: now).map(\.id) == [ids[0], ids[2]])
            #expect(try await storage.entries(EntryFilter(limit: 2, after: ids[0]), now: now).map(\.id) == [ids[1], ids[2]])
            #expect(try await storage.entries(EntryFilter(limit: 0), now: now).isEmpty)
            #expect(try await storage.entry(999_999, now: now) == nil)
            #expect(try await storage.entry(idempotencyKey: "none", now: now) == nil)
        }
    }

    @Test("listings by name and origin: an origin matches its own URLs only; a page examines at most its scan limit of rows and says where the next starts", arguments: StoreKind.allCases)
    func listingsByNameAndOrigin(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([
                Spec(name: "a", url: "https://api.test/x"), Spec(name: "b", url: "https://api.test"), Spec(name: "a", url: "https://api.test.evil.org/x"),
                Spec(name: "a", url: "https://api.test:8443/x"), Spec(name: "a", url: "https://api.test?q=1"), Spec(group: "g", name: "b", url: "https://other.test/"),
                Spec(name: "a", url: "https://api.test/y"),
            ])
            let storage = contract.storage
            let now = contract.now
            #expect(try await storage.entries(EntryFilter(name: "a"), now: now).map(\.id) == [ids[0], ids[2], ids[3], ids[4], ids[6]])
            #expect(try await storage.entries(EntryFilter(origin: "https://api.test"), now: now).map(\.id) == [ids[0], ids[1], ids[4], ids[6]])
            #expect(try await storage.entries(EntryFilter(name: "a", origin: "https://api.test", limit: 2, after: ids[0]), now: now).map(\.id) == [ids[4], ids[6]])
            #expect(try await storage.entries(EntryFilter(group: "g", name: "b"), now: now).map(\.id) == [ids[5]])
            #expect(try await storage.entries(EntryFilter(name: "a%"), now: now).isEmpty, "compared as is, no pattern")
            #expect(try await storage.entries(EntryFilter(origin: "https://api.tes%"), now: now).isEmpty)
            // Scan 3 rows a page: name "b" is on rows 2 and 6.
            var filter = EntryFilter(name: "b", limit: 2)
            let first = try await storage.entryPage(filter, scanLimit: 3, now: now)
            #expect(first.entries.map(\.id) == [ids[1]] && first.next == ids[2], "short: the scan ended at the third row")
            filter.after = first.next
            let second = try await storage.entryPage(filter, scanLimit: 3, now: now)
            #expect(second.entries.map(\.id) == [ids[5]] && second.next == ids[5])
            filter.after = second.next
            let last = try await storage.entryPage(filter, scanLimit: 3, now: now)
            #expect(last.entries.isEmpty && last.next == nil)
            // A full page says to go on after its last entry, unless no row is left.
            let full = try await storage.entryPage(EntryFilter(name: "a", limit: 2), scanLimit: 100, now: now)
            #expect(full.entries.map(\.id) == [ids[0], ids[2]] && full.next == ids[2])
            let unfiltered = try await storage.entryPage(EntryFilter(limit: 3), scanLimit: 100, now: now)
            #expect(unfiltered.entries.map(\.id) == Array(ids[0..<3]) && unfiltered.next == ids[2], "no condition at all")
            let end = try await storage.entryPage(EntryFilter(name: "a", limit: 1, after: ids[4]), scanLimit: 100, now: now)
            #expect(end.entries.map { $0.id } == [ids[6]] && end.next == nil)
            // The window is over the filter's states.
            _ = try await contract.claim(limit: 1)
            let inflight = try await storage.entryPage(EntryFilter(states: [.inflight], name: "a"), scanLimit: 1, now: now)
            #expect(inflight.entries.map(\.id) == [ids[0]] && inflight.next == nil)
            // Pending entries from the first past the cursor, the one in flight left out.
            let pending = try await storage.entryPage(EntryFilter(states: [.pending], limit: 2), scanLimit: 100, now: now)
            #expect(pending.entries.map(\.id) == [ids[1], ids[2]] && pending.next == ids[2])
            let rest = try await storage.entryPage(EntryFilter(states: [.pending, .inflight], limit: 10, after: ids[4]), scanLimit: 100, now: now)
            #expect(rest.entries.map(\.id) == [ids[5], ids[6]] && rest.next == nil)
        }
    }

    @Test("a bulk change in batches: name, origin, after, through and a limit select a batch; a count matches without one", arguments: StoreKind.allCases)
    func bulkBatches(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert((0..<7).map { index in
                Spec(name: index % 2 == 0 ? "even" : "odd", url: index == 4 ? "https://elsewhere.test/x" : nil)
            })
            let storage = contract.storage
            let now = contract.now
            #expect(try await storage.count(matching: EntrySelection(), now: now) == SelectionCount(count: 7, newest: ids[6]))
            #expect(try await storage.count(matching: EntrySelection(name: "even"), now: now) == SelectionCount(count: 4, newest: ids[6]))
            #expect(try await storage.count(matching: EntrySelection(name: "even", origin: "https://example.test", limit: 1), now: now) == SelectionCount(count: 3, newest: ids[6]),
                    "a count ignores the limit")
            #expect(try await storage.count(matching: EntrySelection(name: "odd", through: ids[4]), now: now) == SelectionCount(count: 2, newest: ids[3]))
            #expect(try await storage.count(matching: EntrySelection(states: [.dead], name: "even"), now: now) == SelectionCount())
            let selection = EntrySelection(name: "even", origin: "https://example.test", through: ids[5], limit: 1)
            let dry = try await storage.change(.purge, matching: selection, now: now, dryRun: true)
            #expect(dry.ids == [ids[0]])
            var batch = selection
            var purged: [EntryID] = []
            while true {
                let change = try await storage.change(.purge, matching: batch, now: now, dryRun: false)
                purged += change.ids
                guard let last = (change.ids + change.skipped).max() else { break }
                batch.after = last
            }
            #expect(purged == [ids[0], ids[2]], "id 4 is elsewhere, id 6 came after `through`")
            let retried = try await storage.change(.retry, matching: EntrySelection(name: "odd", after: ids[1], limit: 5), now: now, dryRun: false)
            #expect(retried.ids == [ids[3], ids[5]])
        }
    }

    @Test("a tally counts the newest entries by group, name and state, the network waiters, and the deliveries of the last minutes", arguments: StoreKind.allCases)
    func tallies(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let ids = try await contract.insert([Spec(group: "g", name: "a"), Spec(name: "a"), Spec(group: "g", name: "b"), Spec(name: "b"), Spec(group: "h", name: "a")])
            #expect(try await contract.claim().claimed.map(\.id) == [ids[0], ids[1], ids[3], ids[4]], "the second of group g waits")
            _ = try await contract.settle([Settlement(id: ids[0], transition: .deliver(status: 200))])
            contract.clock.advance(by: .seconds(120))
            let offline = EntryLifecycle.Transition.retry(.init(after: .seconds(3600), consumesAttempt: false, waitingForNetwork: true, error: "no route"))
            _ = try await contract.settle([Settlement(id: ids[1], transition: .deliver(status: 200)), Settlement(id: ids[3], transition: offline)])
            let tally = try await contract.storage.tally(newest: 100, now: contract.now)
            typealias Key = EntryTally.Key
            #expect(tally.counts == [
                Key(group: "g", name: "a", state: .delivered): 1, Key(group: nil, name: "a", state: .delivered): 1,
                Key(group: "g", name: "b", state: .pending): 1, Key(group: nil, name: "b", state: .pending): 1, Key(group: "h", name: "a", state: .inflight): 1,
            ])
            #expect(tally.examined == 5 && tally.waitingForNetwork == 1)
            #expect(tally.deliveredLastMinute == 1 && tally.deliveredLastFiveMinutes == 2)
            let newest = try await contract.storage.tally(newest: 2, now: contract.now)
            #expect(newest.examined == 2 && newest.counts == [Key(group: nil, name: "b", state: .pending): 1, Key(group: "h", name: "a", state: .inflight): 1])
        }
    }

    @Test("an insert, a retry by id or of the dead, and a resume wake the drainers watching the store", arguments: StoreKind.allCases)
    func wakeUps(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let rings = LockedBox(0)
            let watcher = try await contract.drainer { rings.withLock { $0 += 1 } }
            /// Whether `change` is followed by a ring the watcher hears.
            func wakes(_ change: () async throws -> Void) async throws -> Bool {
                let mark = rings.current
                try await change()
                return await eventually { rings.current > mark }
            }
            var ids: [EntryID] = []
            #expect(try await wakes { ids = try await contract.insert([Spec(), Spec()]) }, "an insert")
            _ = try await contract.claim()
            let dead = EntryLifecycle.Transition.deadLetter(.init(.rejected, status: 400, error: "HTTP 400"))
            _ = try await contract.settle(ids.map { Settlement(id: $0, transition: dead) })
            #expect(try await wakes { _ = try await contract.storage.retry(ids: [ids[0]], now: contract.now) }, "a retry by id")
            #expect(try await wakes { _ = try await contract.storage.retry(ids: nil, now: contract.now) }, "a retry of the dead")
            _ = try await contract.storage.pause(group: nil, now: contract.now)
            #expect(try await wakes { _ = try await contract.storage.resume(group: nil, now: contract.now) }, "a resume")
            await watcher.close()
        }
    }

    // MARK: - Upkeep and time

    @Test("retention deletes delivered entries finished before the cutoff, with their bodies; dead and open entries stay", arguments: StoreKind.allCases)
    func retention(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            var specs = [Spec(), Spec(), Spec(), Spec()].map(\.entry)
            let body = try await contract.storage.storeBody(ByteStream(data: Data(repeating: 7, count: 100_000)))
            specs[0].body = body
            let ids = try await contract.storage.insert(specs, now: contract.now).map(\.id)
            _ = try await contract.claim(limit: 3)
            _ = try await contract.settle([
                Settlement(id: ids[0], transition: .deliver(status: 200)),
                Settlement(id: ids[1], transition: .deliver(status: 200)),
                Settlement(id: ids[2], transition: .deadLetter(.init(.rejected, status: 410, error: "HTTP 410"))),
            ])
            #expect(try await contract.storage.deleteDelivered(finishedBefore: contract.now.wall.addingTimeInterval(-30)).deletedEntries == 0)
            // An hour on: PostgreSQL dates `finished_at` on the server's clock, which runs ahead of
            // this manual clock by the time the test took before its first call to the store
            // (over 30 s once, at load 4, while a schema migrated).
            contract.clock.advance(by: .seconds(3600))
            let summary = try await contract.storage.deleteDelivered(finishedBefore: contract.now.wall.addingTimeInterval(-30))
            #expect(summary.deletedEntries == 2 && summary.deletedBodyFiles == 1)
            #expect(try await contract.storage.entries(EntryFilter(), now: contract.now).map(\.id) == [ids[2], ids[3]])
            if case .file(let name, _) = body { #expect(try await !contract.place.bodyExists(name)) }
            _ = try await contract.storage.releaseFreePages()
            #expect(try await contract.storage.integrityCheck() == ["ok"])
        }
    }

    @Test("time rules run on the boot clock: a wall-clock step moves no backoff and no due time, and an entry's age is measured on the boot clock", arguments: StoreKind.allCases)
    func clockRules(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let enqueued = contract.now.uptime
            let ids = try await contract.insert([Spec()])
            contract.clock.advance(by: .seconds(100))
            let claimed = try #require(try await contract.claim().claimed.first)
            #expect(abs(claimed.budgetUptime - enqueued) < 0.01, "the budget started at the enqueue, on the boot clock")
            _ = try await contract.settle([Settlement(id: ids[0], transition: .retry(.init(after: .seconds(60), error: "HTTP 500")))])
            contract.clock.stepWall(by: .seconds(86_400))
            #expect(try await contract.claim().claimed.isEmpty, "a day's step forward is not a minute's backoff")
            contract.clock.stepWall(by: .seconds(-2 * 86_400))
            contract.clock.advance(by: .seconds(61))
            let again = try #require(try await contract.claim().claimed.first, "a step back delays nothing")
            #expect(abs(again.budgetUptime - enqueued) < 0.01)
            let next = try #require(try await contract.storage.entry(ids[0], now: contract.now))
            #expect(next.state == .inflight && next.attempts == 1)
        }
    }
}

// MARK: - Support

/// An entry to insert: what a test varies, the rest fixed.
struct Spec {
    var key: String?
    var group: String?
    var priority = 0
    var notBefore: Date?
    var path: String?
    var name: String?
    /// The whole URL, instead of `https://example.test` and the path.
    var url: String?
    var traceContext: TraceContext?
    /// The entries it waits for, and what it does when one dies.
    var after: [EntryID] = []
    var whenParentDies: ParentDeathPolicy = .die

    init(
        key: String? = nil, group: String? = nil, priority: Int = 0, notBefore: Date? = nil, path: String? = nil, name: String? = nil, url: String? = nil,
        traceContext: TraceContext? = nil, after: [EntryID] = [], whenParentDies: ParentDeathPolicy = .die
    ) {
        self.after = after
        self.whenParentDies = whenParentDies
        self.key = key
        self.group = group
        self.priority = priority
        self.notBefore = notBefore
        self.path = path
        self.name = name
        self.url = url
        self.traceContext = traceContext
    }

    var entry: NewEntry { entry(key: key ?? UUID().uuidString) }

    func entry(key: String) -> NewEntry {
        var entry = NewEntry(
            idempotencyKey: key, method: "POST", url: url ?? "https://example.test" + (path ?? "/" + key),
            headers: [StoredHeader(name: "X-Key", value: key)], body: nil, scopes: [], name: name ?? "POST /test",
            group: group, priority: priority, timeout: nil, notBefore: notBefore, traceContext: traceContext
        )
        entry.after = after
        entry.whenParentDies = whenParentDies
        return entry
    }
}

/// One store under the contract: a first drainer (``first``) on a manual clock, more on
/// demand, each holding its ownership as a drain does before it claims.
struct Contract: RemovableTestResource {
    let place: TestStore
    let clock = ManualQueueClock()
    let first: OfflineQueue
    /// Counts inserts, so keys read `k<batch>-<n>`.
    private let batches = LockedBox(0)

    init(_ kind: StoreKind) async throws {
        place = try TestStore(kind)
        first = try await Self.open(place, clock: clock)
    }

    private static func open(_ place: TestStore, clock: ManualQueueClock, watching wake: (@Sendable () -> Void)? = nil) async throws -> OfflineQueue {
        var configuration = QueueConfiguration(path: place.path, durability: .normal)
        configuration.clock = clock.queueClock
        // Nothing is sent: the suite drives the store, never the transport.
        let client = APIClient(baseURL: URL(string: "https://example.test")!, transport: StubTransport())
        let queue = try await place.open(configuration, client: client)
        if let wake { queue.store.observeRemoteEnqueues(wake) }
        _ = try await queue.store.prepareDrain(DrainPreparation(), now: clock.queueClock.now())
        return queue
    }

    /// Another drainer over the same rows (another process, on a file or a database), which
    /// calls `wake` when the store says another enqueued.
    func drainer(watching wake: (@Sendable () -> Void)? = nil) async throws -> OfflineQueue {
        try await Self.open(place, clock: clock, watching: wake)
    }

    var storage: any QueueStorage { first.store }
    var now: QueueTime { clock.queueClock.now() }

    /// Inserts one entry per spec in one call, keys `k<batch>-<n>` unless given; returns the ids.
    func insert(_ specs: [Spec]) async throws -> [EntryID] {
        let batch = batches.withLock { count -> Int in
            defer { count += 1 }
            return count
        }
        let entries = specs.enumerated().map { index, spec in spec.entry(key: spec.key ?? "k\(batch)-\(index + 1)") }
        let tickets = try await storage.insert(entries, now: now)
        #expect(tickets.allSatisfy { !$0.deduplicated })
        return tickets.map(\.id)
    }

    /// One drain commit of `queue` (the first drainer unless given), as the drain makes it.
    func claim(
        _ queue: OfflineQueue? = nil, settling settlements: [Settlement] = [], limit: Int = 10, lease: Duration = .seconds(60),
        since: Double? = nil, reclaim: Bool = true
    ) async throws -> ClaimResult {
        try await (queue ?? first).store.settleAndClaim(
            settlements, now: now, claimLimit: limit, lease: lease, attemptedSince: since, chores: ClaimChores(reclaimOrphans: reclaim)
        )
    }

    /// Records `settlements` by `queue` (the first drainer unless given); returns those lost.
    func settle(_ settlements: [Settlement], by queue: OfflineQueue? = nil) async throws -> Set<EntryID> {
        try await (queue ?? first).store.settle(settlements, now: now)
    }

    func remove() async {
        await first.close()
        await place.remove()
    }
}
