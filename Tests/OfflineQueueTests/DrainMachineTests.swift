import Foundation
@testable import OfflineQueue
@testable import OfflineQueueCore
import QueueTestSupport
import Testing

/// The drain's policy on its own: events in, actions out, time given as numbers. No store, no
/// server, no sleeping.
@Suite("DrainMachine: claims, starts, flushes, renewals, stops and the end")
struct DrainMachineTests {
    static func entry(_ id: EntryID) -> QueueEntry {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        return QueueEntry(
            id: id, idempotencyKey: "key-\(id)", method: "POST", url: "http://127.0.0.1/x", headers: [], body: nil,
            scopes: [], name: "POST /x", group: nil, priority: 0, timeout: nil, state: .inflight, attempts: 0,
            createdAt: now, budgetStartedAt: now, nextAttemptAt: now, lastAttemptAt: nil, finishedAt: nil,
            waitingForNetwork: false, leaseOwner: "me", leaseExpiresAt: nil, lastStatus: nil, lastError: nil, responseExcerpt: nil
        )
    }

    static func entries(_ ids: ClosedRange<EntryID>) -> [QueueEntry] { ids.map(entry) }

    static func machine(limit: Int = 2, renewal: Duration? = nil, online: Bool = true) -> DrainMachine {
        DrainMachine(settings: DrainMachine.Settings(limit: limit, renewal: renewal, maxDelay: .seconds(300)), online: online)
    }

    static func ms(_ value: Int64) -> Duration { .milliseconds(value) }

    static func delivered(_ id: EntryID) -> Settlement { Settlement(id: id, transition: .deliver(status: 200)) }

    /// The commit the machine asks for next, failing the test when it asks for something else.
    static func expectCommit(_ machine: inout DrainMachine, at now: Duration, sourceLocation: SourceLocation = #_sourceLocation) -> DrainMachine.Commit? {
        guard case .commit(let commit) = machine.next(at: now) else {
            Issue.record("expected a commit", sourceLocation: sourceLocation)
            return nil
        }
        return commit
    }

    /// A machine past its first claim (which found `claimed`) and its first start.
    static func started(limit: Int = 2, renewal: Duration? = nil, claimed: [QueueEntry], sourceLocation: SourceLocation = #_sourceLocation) -> DrainMachine {
        var machine = machine(limit: limit, renewal: renewal)
        _ = expectCommit(&machine, at: .zero, sourceLocation: sourceLocation)
        machine.committed(ClaimResult(claimed: claimed), at: .zero)
        guard case .start = machine.next(at: .zero) else {
            Issue.record("expected a start", sourceLocation: sourceLocation)
            return machine
        }
        return machine
    }

    @Test("the first claim asks for twice the limit, with both chores; claimed entries start up to the limit; the rest wait")
    func claimAndStart() throws {
        var machine = Self.machine(limit: 2)
        let first = try #require(Self.expectCommit(&machine, at: .zero))
        #expect(first.claimLimit == 4 && first.settlements.isEmpty)
        #expect(first.chores.carryOver && first.chores.reclaimOrphans)
        machine.committed(ClaimResult(claimed: Self.entries(1...4)), at: .zero)
        guard case .start(let started) = machine.next(at: .zero) else { Issue.record("expected a start"); return }
        #expect(started.map(\.id) == [1, 2])
        // Two running and two ready: more than the limit held, so no claim; nothing to record.
        guard case .wait(let deadline) = machine.next(at: .zero) else { Issue.record("expected a wait"); return }
        #expect(deadline == nil, "nothing is due at a time: only an event can move the drain")
    }

    @Test("with a batch and a reserve: the first claim asks for limit + reserve + batch; the next comes while the reserve is still in hand; a batch of finished attempts is recorded at once")
    func batchAndReserve() throws {
        var machine = DrainMachine(settings: DrainMachine.Settings(limit: 2, batch: 4, reserve: 1, maxDelay: .seconds(300)), online: true)
        let first = try #require(Self.expectCommit(&machine, at: .zero))
        #expect(first.claimLimit == 7)
        machine.committed(ClaimResult(claimed: Self.entries(1...7)), at: .zero)
        guard case .start(let started) = machine.next(at: .zero) else { Issue.record("expected a start"); return }
        #expect(started.map(\.id) == [1, 2])
        // Three finish and three more start: two running, two ready; four held, more than
        // limit + reserve, and three to record, fewer than a batch.
        for id: EntryID in 1...3 {
            machine.finished(Self.delivered(id), networkGone: false, at: Self.ms(Int64(id)))
            guard case .start = machine.next(at: Self.ms(Int64(id))) else { Issue.record("expected a start"); return }
        }
        guard case .wait = machine.next(at: Self.ms(3)) else { Issue.record("expected a wait"); return }
        // A fourth: a batch to record, and three held (two running, one ready) is the level to claim at.
        machine.finished(Self.delivered(4), networkGone: false, at: Self.ms(4))
        guard case .start(let fifth) = machine.next(at: Self.ms(4)) else { Issue.record("expected a start"); return }
        #expect(fifth.map(\.id) == [6])
        let commit = try #require(Self.expectCommit(&machine, at: Self.ms(4)))
        #expect(commit.settlements.map(\.id) == [1, 2, 3, 4])
        #expect(commit.claimLimit == 4, "limit + reserve + batch, less the three held")
    }

    @Test("a finished attempt is recorded with the next claim, after the flush delay at the latest")
    func flush() throws {
        var machine = Self.started(limit: 4, claimed: Self.entries(1...8))
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(10))
        guard case .start(let next) = machine.next(at: Self.ms(10)) else { Issue.record("expected a start"); return }
        #expect(next.map(\.id) == [5])
        guard case .wait(let deadline) = machine.next(at: Self.ms(10)) else { Issue.record("expected a wait"); return }
        #expect(deadline == Self.ms(60), "the flush delay after the oldest finished")
        let commit = try #require(Self.expectCommit(&machine, at: Self.ms(60)))
        #expect(commit.settlements.map(\.id) == [1])
        #expect(commit.claimLimit == 0, "four running and three ready: no claim yet")
        #expect(!commit.chores.carryOver && !commit.chores.reclaimOrphans, "a commit without a claim does no chores")
        machine.committed(ClaimResult(), at: Self.ms(61))
        #expect(machine.summary.delivered == 1)
    }

    @Test("sends start and finish while a commit runs; no second commit, no flush timer and no end until it is done")
    func commitRunsBesideSends() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...4))
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(1))
        machine.finished(Self.delivered(2), networkGone: false, at: Self.ms(2))
        guard case .start(let next) = machine.next(at: Self.ms(2)) else { Issue.record("expected a start"); return }
        #expect(next.map(\.id) == [3, 4])
        let commit = try #require(Self.expectCommit(&machine, at: Self.ms(2)))
        #expect(commit.settlements.map(\.id) == [1, 2] && commit.claimLimit == 2)
        // The commit is under way; the two sends finish meanwhile.
        machine.finished(Self.delivered(3), networkGone: false, at: Self.ms(3))
        machine.finished(Self.delivered(4), networkGone: false, at: Self.ms(4))
        // Idle, with two to record, long past the flush delay: still only waiting for the commit.
        guard case .wait(let deadline) = machine.next(at: Self.ms(500)) else { Issue.record("expected a wait for the commit"); return }
        #expect(deadline == nil, "the commit's end wakes the drain, not a timer")
        machine.committed(ClaimResult(), at: Self.ms(501))
        let second = try #require(Self.expectCommit(&machine, at: Self.ms(501)))
        #expect(second.settlements.map(\.id) == [3, 4] && second.claimLimit == 4)
        guard case .wait = machine.next(at: Self.ms(501)) else { Issue.record("no end while the last commit runs"); return }
        machine.committed(ClaimResult(), at: Self.ms(502))
        guard case .finish = machine.next(at: Self.ms(502)) else { Issue.record("expected the end"); return }
        #expect(machine.summary.delivered == 4)
    }

    @Test("`limit` finished attempts are recorded at once, without waiting for the delay")
    func flushWhenFull() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...2))
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(1))
        machine.finished(Self.delivered(2), networkGone: false, at: Self.ms(2))
        let commit = try #require(Self.expectCommit(&machine, at: Self.ms(2)))
        #expect(commit.settlements.count == 2)
        #expect(commit.claimLimit == 4, "idle: claim again, since retries may have come due")
    }

    @Test("exhaustion: a claim that finds less waits for idle; an idle claim that finds nothing ends the drain")
    func exhaustion() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...1))
        guard case .wait = machine.next(at: .zero) else { Issue.record("no claim while the last found less than it asked for"); return }
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(5))
        let again = try #require(Self.expectCommit(&machine, at: Self.ms(5)))
        #expect(again.claimLimit == 4 && again.settlements.count == 1)
        machine.committed(ClaimResult(), at: Self.ms(6))
        guard case .finish = machine.next(at: Self.ms(6)) else { Issue.record("expected the end"); return }
        #expect(machine.summary.delivered == 1)
    }

    @Test("stop: claimed entries not started are given back; sends under way end; then the drain ends")
    func stop() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...4))
        machine.stop()
        let release = try #require(Self.expectCommit(&machine, at: Self.ms(1)))
        #expect(release.claimLimit == 0)
        #expect(release.settlements.map(\.id) == [3, 4])
        #expect(release.settlements.allSatisfy { $0.transition == .release })
        machine.committed(ClaimResult(), at: Self.ms(2))
        #expect(machine.summary.released == 2)
        guard case .wait = machine.next(at: Self.ms(2)) else { Issue.record("sends under way run to their end"); return }
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(3))
        machine.finished(Settlement(id: 2, transition: .release), networkGone: false, at: Self.ms(4))
        let last = try #require(Self.expectCommit(&machine, at: Self.ms(4)))
        #expect(last.settlements.count == 2 && last.claimLimit == 0)
        machine.committed(ClaimResult(), at: Self.ms(5))
        guard case .finish = machine.next(at: Self.ms(5)) else { Issue.record("expected the end"); return }
        #expect(machine.summary.delivered == 1 && machine.summary.released == 3)
        #expect(!machine.summary.offline)
    }

    @Test("network loss, from a send or the monitor, stops claiming and marks the summary offline; the network back resumes")
    func networkLoss() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...3))
        let waiting = Settlement(
            id: 1, transition: .retry(.init(after: .seconds(30), consumesAttempt: false, waitingForNetwork: true, error: "offline"))
        )
        machine.finished(waiting, networkGone: true, at: Self.ms(1))
        let commit = try #require(Self.expectCommit(&machine, at: Self.ms(1)))
        #expect(commit.claimLimit == 0)
        #expect(commit.settlements.map(\.id) == [1, 3], "the waiter, and the ready entry given back")
        machine.committed(ClaimResult(), at: Self.ms(2))
        #expect(machine.summary.offline && machine.summary.waitingForNetwork == 1)

        // The monitor: offline stops claiming, online again claims.
        var monitored = Self.machine(limit: 1, online: false)
        guard case .finish = monitored.next(at: .zero) else { Issue.record("offline from the start: nothing claimed, the end"); return }
        #expect(monitored.summary.offline)
        var flipping = Self.machine(limit: 1)
        flipping.network(online: false)
        flipping.network(online: true)
        #expect(try #require(Self.expectCommit(&flipping, at: .zero)).claimLimit == 2)
    }

    @Test("leases are renewed at the renewal interval after their claim or last renewal, and only while held")
    func leaseRenewal() throws {
        var machine = Self.started(limit: 2, renewal: .seconds(150), claimed: Self.entries(1...2))
        // Exhausted and not idle: a wait, with a timer for the renewal.
        guard case .wait(let deadline) = machine.next(at: .seconds(1)) else { Issue.record("expected a wait"); return }
        #expect(deadline == .seconds(150))
        guard case .renew(let ids) = machine.next(at: .seconds(150)) else { Issue.record("expected a renewal"); return }
        #expect(ids == [1, 2])
        machine.renewed(ids, at: .seconds(150))
        guard case .wait(let later) = machine.next(at: .seconds(150)) else { Issue.record("expected a wait"); return }
        #expect(later == .seconds(300))
        machine.finished(Self.delivered(1), networkGone: false, at: .seconds(200))
        _ = Self.expectCommit(&machine, at: .seconds(201))   // flush
        machine.committed(ClaimResult(), at: .seconds(201))
        guard case .renew(let remaining) = machine.next(at: .seconds(300)) else { Issue.record("expected a renewal"); return }
        #expect(remaining == [2], "a finished entry's lease is no longer the drain's to renew")
        // Without renewal, no timer at all.
        var plain = Self.started(limit: 1, claimed: [Self.entry(9)])
        guard case .wait(nil) = plain.next(at: .seconds(10_000)) else { Issue.record("expected a wait without a timer"); return }
    }

    @Test("orphans are looked for at the first claim and then at most once per interval; carry-over only at the first")
    func chores() throws {
        var machine = Self.machine(limit: 1)
        #expect(try #require(Self.expectCommit(&machine, at: .zero)).chores.reclaimOrphans)
        machine.committed(ClaimResult(claimed: [Self.entry(1)]), at: .zero)
        _ = machine.next(at: .zero)
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(100))
        let soon = try #require(Self.expectCommit(&machine, at: Self.ms(100)))
        #expect(!soon.chores.reclaimOrphans && !soon.chores.carryOver)
        machine.committed(ClaimResult(claimed: [Self.entry(2)]), at: Self.ms(100))
        _ = machine.next(at: Self.ms(100))
        machine.finished(Self.delivered(2), networkGone: false, at: .seconds(2))
        let later = try #require(Self.expectCommit(&machine, at: .seconds(2)))
        #expect(later.chores.reclaimOrphans && !later.chores.carryOver)
    }

    @Test("a failed commit that is not a full disk stops the drain: nothing more is claimed or recorded, and the failure is kept")
    func failure() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...2))
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(1))
        _ = Self.expectCommit(&machine, at: Self.ms(100))
        machine.commitFailed(.io(path: "/q.db", reason: "disk I/O error"))
        guard case .wait(nil) = machine.next(at: Self.ms(100)) else { Issue.record("the send under way ends first"); return }
        machine.finished(Self.delivered(2), networkGone: false, at: Self.ms(120))
        guard case .finish = machine.next(at: Self.ms(120)) else { Issue.record("expected the end"); return }
        #expect(machine.failure == .io(path: "/q.db", reason: "disk I/O error"))
        #expect(machine.recording == .nothing)
        #expect(machine.summary.delivered == 0, "nothing it could not record is counted")
    }

    @Test("a full disk: nothing more is claimed or started; the failed commit and every send under way are recorded on the full disk, sends before entries given back; then the end, with the failure")
    func fullDisk() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...6))
        // 1 was interrupted (given back unsent), 2 delivered: 3 and 4 start in their place.
        machine.finished(Settlement(id: 1, transition: .release), networkGone: false, at: Self.ms(1))
        machine.finished(Self.delivered(2), networkGone: false, at: Self.ms(2))
        guard case .start(let next) = machine.next(at: Self.ms(2)) else { Issue.record("expected a start"); return }
        #expect(next.map(\.id) == [3, 4])
        let failed = try #require(Self.expectCommit(&machine, at: Self.ms(100)))
        #expect(failed.settlements.map(\.id) == [1, 2] && !failed.onFullDisk)
        machine.commitFailed(.diskFull(path: "/q.db"))
        #expect(machine.recording == .onFullDisk)

        let first = try #require(Self.expectCommit(&machine, at: Self.ms(101)))
        #expect(first.onFullDisk && first.claimLimit == 0)
        #expect(first.settlements.map(\.id) == [2, 1, 5, 6], "what was sent first, then what goes back unsent (1, and 5 and 6 never started)")
        // The sends under way end while it is written.
        machine.finished(Self.delivered(3), networkGone: false, at: Self.ms(102))
        let retry = Settlement(id: 4, transition: .retry(.init(after: .seconds(2), consumesAttempt: true, waitingForNetwork: false, error: "503")))
        machine.finished(retry, networkGone: false, at: Self.ms(103))
        guard case .wait(nil) = machine.next(at: Self.ms(103)) else { Issue.record("one commit at a time, no timer"); return }
        machine.committed(ClaimResult(), at: Self.ms(104))

        let second = try #require(Self.expectCommit(&machine, at: Self.ms(104)))
        #expect(second.onFullDisk && second.claimLimit == 0 && second.settlements.map(\.id) == [3, 4])
        machine.committed(ClaimResult(), at: Self.ms(105))
        guard case .finish = machine.next(at: Self.ms(105)) else { Issue.record("expected the end"); return }
        #expect(machine.failure == .diskFull(path: "/q.db"))
        #expect(machine.summary.delivered == 2 && machine.summary.failed == 1 && machine.summary.released == 3)
    }

    @Test("a full disk, and recording on it fails too: nothing more is recorded, the sends under way end, then the end")
    func fullDiskTwice() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...2))
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(1))
        _ = Self.expectCommit(&machine, at: Self.ms(100))
        machine.commitFailed(.diskFull(path: "/q.db"))
        let onFull = try #require(Self.expectCommit(&machine, at: Self.ms(100)))
        #expect(onFull.onFullDisk && onFull.settlements.map(\.id) == [1])
        machine.commitFailed(.diskFull(path: "/q.db"))
        #expect(machine.recording == .nothing)
        guard case .wait(nil) = machine.next(at: Self.ms(101)) else { Issue.record("the send under way ends first"); return }
        machine.finished(Self.delivered(2), networkGone: false, at: Self.ms(120))
        guard case .finish = machine.next(at: Self.ms(120)) else { Issue.record("expected the end"); return }
        #expect(machine.summary.delivered == 0)
    }

    @Test("a renewal that finds the disk full stops claiming; the commit under way ends as it ends; the rest is recorded on the full disk")
    func renewalOnFullDisk() throws {
        var machine = Self.started(limit: 1, renewal: .seconds(150), claimed: Self.entries(1...3))
        machine.finished(Self.delivered(1), networkGone: false, at: .seconds(149))
        guard case .start = machine.next(at: .seconds(149)) else { Issue.record("expected a start"); return }
        let commit = try #require(Self.expectCommit(&machine, at: .seconds(150)))
        #expect(commit.settlements.map(\.id) == [1])
        guard case .renew(let ids) = machine.next(at: .seconds(150)) else { Issue.record("expected a renewal"); return }
        #expect(ids == [2, 3])
        machine.renewalFailed(.diskFull(path: "/q.db"))
        machine.committed(ClaimResult(), at: .seconds(151))
        #expect(machine.summary.delivered == 1, "the commit under way was written")
        machine.finished(Self.delivered(2), networkGone: false, at: .seconds(152))
        let rest = try #require(Self.expectCommit(&machine, at: .seconds(152)))
        #expect(rest.onFullDisk && rest.claimLimit == 0 && rest.settlements.map(\.id) == [2, 3])
        machine.committed(ClaimResult(), at: .seconds(153))
        guard case .finish = machine.next(at: .seconds(153)) else { Issue.record("expected the end"); return }
        #expect(machine.failure == .diskFull(path: "/q.db") && machine.summary.delivered == 2 && machine.summary.released == 1)
    }

    @Test("lost leases are counted as lost, not as their transitions")
    func lostLeases() throws {
        var machine = Self.started(limit: 2, claimed: Self.entries(1...2))
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(1))
        machine.finished(Self.delivered(2), networkGone: false, at: Self.ms(2))
        _ = Self.expectCommit(&machine, at: Self.ms(2))
        machine.committed(ClaimResult(lost: [2], reclaimed: 3), at: Self.ms(3))
        #expect(machine.summary.delivered == 1 && machine.summary.leasesLost == 1 && machine.summary.reclaimed == 3)
    }

    // MARK: - Flow control

    static func entry(_ id: EntryID, url: String) -> QueueEntry {
        var entry = entry(id)
        entry.url = url
        return entry
    }

    @Test("a 429 with Retry-After gives back, unsent, what is in hand for its origin; another drainer's pause, reported by a claim, too")
    func pausedOriginsGoBack() throws {
        let a = "https://a.test/x", b = "https://b.test/y"
        var machine = Self.started(limit: 1, claimed: [Self.entry(1, url: a), Self.entry(2, url: a), Self.entry(3, url: b), Self.entry(4, url: a)])
        let pause = EntryLifecycle.Transition.retry(.init(after: .seconds(30), consumesAttempt: false, status: 429, error: "HTTP 429", originPause: .seconds(30)))
        machine.finished(Settlement(id: 1, transition: pause, url: a), networkGone: false, at: Self.ms(5))
        guard case .start(let next) = machine.next(at: Self.ms(5)) else { Issue.record("expected a start"); return }
        #expect(next.map(\.id) == [3], "the other origin's entry goes; the paused one's go back")
        let commit = try #require(Self.expectCommit(&machine, at: Self.ms(100)))
        #expect(commit.settlements.map(\.id) == [1, 2, 4])
        #expect(commit.settlements.dropFirst().allSatisfy { $0.transition == .release })

        // A claim reports an origin another drainer's answer paused: its entries in hand go back.
        var other = Self.started(limit: 1, claimed: [Self.entry(5, url: b)])
        other.finished(Self.delivered(5), networkGone: false, at: Self.ms(5))
        let flush = try #require(Self.expectCommit(&other, at: Self.ms(5)))
        var result = ClaimResult(claimed: [Self.entry(6, url: b), Self.entry(7, url: a)])
        result.pausedOrigins = ["https://b.test"]
        other.committed(result, at: Self.ms(6))
        guard case .start(let after) = other.next(at: Self.ms(6)) else { Issue.record("expected a start"); return }
        #expect(flush.claimLimit > 0 && after.map(\.id) == [7])
    }

    static func serverError(_ id: EntryID, url: String) -> Settlement {
        Settlement(id: id, transition: .retry(.init(after: .seconds(1), consumesAttempt: true, status: 500, error: "HTTP 500")), url: url)
    }

    @Test("a cap of sends per origin: the others wait in hand, where a pause gives them back unsent (not in the transport's pool); other origins are not held behind them")
    func sendsPerOrigin() throws {
        let a = "http://a.test/x", b = "http://b.test/y"
        var machine = DrainMachine(settings: DrainMachine.Settings(
            limit: 8, maxDelay: .seconds(300), sendsPerOrigin: { origin in origin == "http://a.test" ? 2 : nil }
        ), online: true)
        _ = try #require(Self.expectCommit(&machine, at: .zero))
        machine.committed(ClaimResult(claimed: (1...6).map { Self.entry($0, url: a) } + [Self.entry(7, url: b)]), at: .zero)
        guard case .start(let first) = machine.next(at: .zero) else { Issue.record("expected a start"); return }
        #expect(first.map(\.id) == [1, 2, 7], "two to a.test, its cap; b.test's entry beside them")
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(5))
        guard case .start(let second) = machine.next(at: Self.ms(5)) else { Issue.record("expected a start"); return }
        #expect(second.map(\.id) == [3], "one finished, one more starts")
        // A 429 with Retry-After: the four waiting in hand go back unsent; nothing more starts.
        let pause = EntryLifecycle.Transition.retry(.init(after: .seconds(30), consumesAttempt: false, status: 429, error: "HTTP 429", originPause: .seconds(30)))
        machine.finished(Settlement(id: 2, transition: pause, url: a), networkGone: false, at: Self.ms(6))
        let commit = try #require(Self.expectCommit(&machine, at: Self.ms(100)))
        #expect(Set(commit.settlements.filter { $0.transition == .release }.map(\.id)) == [4, 5, 6])
    }

    @Test("a circuit a claim reports open: what is in hand for its origin goes back unsent, but its probe goes; a drainer that meets openAfter unwell answers itself gives back at once and records them without waiting")
    func circuitGivesBack() throws {
        let a = "https://a.test/x", b = "https://b.test/y"
        var machine = Self.started(limit: 1, claimed: [Self.entry(1, url: b)])
        machine.finished(Self.delivered(1), networkGone: false, at: Self.ms(5))
        _ = try #require(Self.expectCommit(&machine, at: Self.ms(5)))
        var result = ClaimResult(claimed: [Self.entry(2, url: a), Self.entry(3, url: a), Self.entry(4, url: b)])
        result.opened = ["https://a.test"]
        result.probes = [3]
        machine.committed(result, at: Self.ms(6))
        #expect(machine.probes == [3])
        guard case .start(let next) = machine.next(at: Self.ms(6)) else { Issue.record("expected a start"); return }
        #expect(next.map(\.id) == [3], "the probe goes; 2 went back")

        // openAfter (here 2) unwell answers met by this drainer: the rest in hand go back, and
        // the answers are recorded at once (no batch, no flush delay).
        var flow = FlowSettings()
        flow.openAfter = 2
        var own = DrainMachine(settings: DrainMachine.Settings(limit: 2, batch: 64, maxDelay: .seconds(300), flow: flow), online: true)
        _ = try #require(Self.expectCommit(&own, at: .zero))
        own.committed(ClaimResult(claimed: (10...15).map { Self.entry($0, url: a) } + [Self.entry(16, url: b)]), at: .zero)
        guard case .start(let started) = own.next(at: .zero) else { Issue.record("expected a start"); return }
        #expect(started.map(\.id) == [10, 11])
        own.finished(Self.serverError(10, url: a), networkGone: false, at: Self.ms(1))
        guard case .start(let one) = own.next(at: Self.ms(1)) else { Issue.record("expected a start"); return }
        #expect(one.map(\.id) == [16], "after an unwell answer, one send at a time to that origin (11 is under way): b.test's goes")
        own.finished(Self.serverError(11, url: a), networkGone: false, at: Self.ms(2))
        let commit = try #require(Self.expectCommit(&own, at: Self.ms(2)))
        #expect(commit.settlements.map(\.id).sorted() == [10, 11, 12, 13, 14, 15])
        #expect(commit.settlements.filter { $0.transition == .release }.map(\.id).sorted() == [12, 13, 14, 15])
    }

    @Test("a claim held back by a limit's next token waits for it and claims again, not ending the drain; a long hold ends it")
    func heldByALimit() throws {
        var machine = Self.machine(limit: 2)
        _ = try #require(Self.expectCommit(&machine, at: .zero))
        machine.committed(ClaimResult(claimed: [], heldFor: Self.ms(100)), at: .zero)
        guard case .wait(let until) = machine.next(at: .zero) else { Issue.record("expected a wait for the token"); return }
        #expect(until == Self.ms(100))
        let again = try #require(Self.expectCommit(&machine, at: Self.ms(100)))
        #expect(again.claimLimit > 0)
        machine.committed(ClaimResult(claimed: [], heldFor: .seconds(30)), at: Self.ms(100))
        guard case .finish = machine.next(at: Self.ms(100)) else { Issue.record("a pause of 30 s is the service's to wait for"); return }
        #expect(machine.summary.heldFor == .seconds(30))
    }

    @Test("the renewal's deadline is the earliest lease held: when every entry of the oldest claim has finished, the next claim's")
    func renewalDeadlineFollowsEarliestLease() throws {
        var machine = DrainMachine(settings: DrainMachine.Settings(limit: 2, batch: 2, reserve: 0, renewal: .seconds(150), maxDelay: .seconds(300)), online: true)
        _ = try #require(Self.expectCommit(&machine, at: .zero))
        machine.committed(ClaimResult(claimed: Self.entries(1...4)), at: .zero)
        guard case .start(let first) = machine.next(at: .zero) else { Issue.record("expected a start"); return }
        #expect(first.map(\.id) == [1, 2])
        // 1 and 2 finish; 3 and 4 start; a batch of two to record goes with a claim of two more.
        for id: EntryID in 1...2 { machine.finished(Self.delivered(id), networkGone: false, at: .seconds(10)) }
        guard case .start(let second) = machine.next(at: .seconds(10)) else { Issue.record("expected a start"); return }
        #expect(second.map(\.id) == [3, 4])
        let commit = try #require(Self.expectCommit(&machine, at: .seconds(10)))
        #expect(commit.settlements.map(\.id) == [1, 2] && commit.claimLimit == 2)
        machine.committed(ClaimResult(claimed: Self.entries(5...6)), at: .seconds(20))
        guard case .wait(let held) = machine.next(at: .seconds(20)) else { Issue.record("expected a wait"); return }
        #expect(held == .seconds(150), "3 and 4, claimed at 0, are held")
        for id: EntryID in 3...4 { machine.finished(Self.delivered(id), networkGone: false, at: .seconds(30)) }
        guard case .start(let third) = machine.next(at: .seconds(30)) else { Issue.record("expected a start"); return }
        #expect(third.map(\.id) == [5, 6])
        _ = try #require(Self.expectCommit(&machine, at: .seconds(30)))
        machine.committed(ClaimResult(), at: .seconds(31))
        guard case .wait(let later) = machine.next(at: .seconds(31)) else { Issue.record("expected a wait"); return }
        #expect(later == .seconds(170), "only 5 and 6 are held, claimed at 20")
        guard case .renew(let ids) = machine.next(at: .seconds(170)) else { Issue.record("expected a renewal"); return }
        #expect(ids == [5, 6])
    }

    @Test("claimed entries in hand: first claimed, first started; taking shifts nothing, a claim adds after; given back in order")
    func readyEntries() {
        var ready = ReadyEntries()
        #expect(ready.isEmpty && ready.takeFirst(3).isEmpty)
        ready.append(contentsOf: Self.entries(1...5))
        #expect(ready.count == 5)
        #expect(ready.takeFirst(2).map(\.id) == [1, 2])
        #expect(ready.count == 3 && !ready.isEmpty)
        ready.append(contentsOf: Self.entries(6...7))
        #expect(ready.takeFirst(1).map(\.id) == [3])
        let given = ready.removeAll { $0.id.isMultiple(of: 2) }
        #expect(given.map(\.id) == [4, 6])
        #expect(ready.count == 2)
        #expect(ready.takeFirst(10).map(\.id) == [5, 7])
        #expect(ready.isEmpty && ready.count == 0)
        ready.append(contentsOf: Self.entries(8...8))
        #expect(ready.takeFirst(0).isEmpty && ready.count == 1)
        #expect(ready.removeAll { _ in true }.map(\.id) == [8] && ready.isEmpty)
    }
}
