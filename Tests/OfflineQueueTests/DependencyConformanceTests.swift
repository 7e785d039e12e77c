import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Entries that wait for others (``EnqueueOptions/after``), as the storage contract keeps them,
/// on every store: blocked until each parent is delivered, by any drainer; what the child's
/// policy says when a parent dies or is purged; a retry or a purge of a parent; the claim,
/// the group order and the counts around them.
@Suite("Store conformance: entries that wait for others, on every store")
struct DependencyConformanceTests {
    private static let delivered = EntryLifecycle.Transition.deliver(status: 201)
    private static let rejected = EntryLifecycle.Transition.deadLetter(.init(.rejected, status: 422, error: "HTTP 422"))

    private func state(_ contract: Contract, _ id: EntryID) async throws -> EntryState? {
        try await contract.storage.entry(id, now: contract.now)?.state
    }

    @Test("a child is blocked, never claimed, until every parent is delivered; then it is due in the same commit", arguments: StoreKind.allCases)
    func blockedUntilDelivered(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let parents = try await contract.insert([Spec(), Spec()])
            let child = try await contract.insert([Spec(after: parents)])[0]
            #expect(try await state(contract, child) == .blocked)
            let counts = try await contract.storage.counts(now: contract.now)
            #expect(counts.blocked == 1 && counts.pending == 2 && counts.due == 2 && counts.open == 3, "a blocked entry is open but neither pending nor due")
            #expect(try await contract.claim().claimed.map(\.id) == parents, "the child is not claimed with its parents")
            // One parent delivered: still blocked.
            let first = try await contract.claim(settling: [Settlement(id: parents[0], transition: Self.delivered)])
            #expect(first.claimed.isEmpty)
            #expect(try await state(contract, child) == .blocked)
            // The last one delivered: the same commit claims the child.
            let second = try await contract.claim(settling: [Settlement(id: parents[1], transition: Self.delivered)])
            #expect(second.claimed.map(\.id) == [child])
            let links = try await contract.storage.dependencies(of: child)
            #expect(links == EntryDependencies(parents: parents, children: [], whenParentDies: .die))
            #expect(try await contract.storage.dependencies(of: parents[0]) == EntryDependencies(parents: [], children: [child]))
        }
    }

    @Test("a parent delivered by another drainer releases the child for every drainer; one delivered before the child is enqueued does not block it", arguments: StoreKind.allCases)
    func otherDrainers(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let other = try await contract.drainer()
            let parent = try await contract.insert([Spec()])[0]
            let child = try await contract.insert([Spec(after: [parent])])[0]
            #expect(try await contract.claim(other).claimed.map(\.id) == [parent])
            _ = try await contract.settle([Settlement(id: parent, transition: Self.delivered)], by: other)
            #expect(try await contract.claim().claimed.map(\.id) == [child], "another drainer's delivery releases it")
            let late = try await contract.insert([Spec(after: [parent])])[0]
            #expect(try await state(contract, late) == .pending, "its parent was delivered already")
            await other.close()
        }
    }

    @Test("a parent that dies: the child dies with it by default (and its own children), waits for a retry, or proceeds", arguments: StoreKind.allCases)
    func parentDies(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let parent = try await contract.insert([Spec()])[0]
            let children = try await contract.insert([
                Spec(after: [parent]), Spec(after: [parent], whenParentDies: .wait), Spec(after: [parent], whenParentDies: .proceed),
            ])
            let (dies, waits, proceeds) = (children[0], children[1], children[2])
            let grandchild = try await contract.insert([Spec(after: [dies])])[0]
            #expect(try await contract.claim().claimed.map(\.id) == [parent])
            let result = try await contract.claim(settling: [Settlement(id: parent, transition: Self.rejected)])
            #expect(result.claimed.map(\.id) == [proceeds], "the child that proceeds goes in the same commit")
            let dead = try #require(try await contract.storage.entry(dies, now: contract.now))
            #expect(dead.state == .dead && dead.deadReason == .parentDead && dead.attempts == 0 && dead.finishedAt != nil)
            #expect(dead.lastError == "entry \(parent) it waits for is dead; not sent")
            let grand = try #require(try await contract.storage.entry(grandchild, now: contract.now))
            #expect(grand.state == .dead && grand.lastError == "entry \(dies) it waits for is dead; not sent", "the death cascades")
            #expect(try await state(contract, waits) == .blocked)
            // The operator retries the parent; once it is delivered the waiting child goes.
            #expect(try await contract.storage.retry(ids: [parent], now: contract.now) == [parent])
            #expect(try await contract.claim().claimed.map(\.id) == [parent])
            #expect(try await contract.claim(settling: [Settlement(id: parent, transition: Self.delivered)]).claimed.map(\.id) == [waits])
        }
    }

    @Test("a retried child waits for its parents again; a purged parent releases or kills its children by their policy", arguments: StoreKind.allCases)
    func retryAndPurge(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let parents = try await contract.insert([Spec(), Spec()])
            let dies = try await contract.insert([Spec(after: [parents[0]])])[0]
            #expect(try await contract.claim(limit: 1).claimed.map(\.id) == [parents[0]])
            _ = try await contract.settle([Settlement(id: parents[0], transition: Self.rejected)])
            #expect(try await state(contract, dies) == .dead)
            // Retrying the dead child alone: its parent is still dead, so it dies again at once.
            _ = try await contract.storage.retry(ids: [dies], now: contract.now)
            #expect(try await state(contract, dies) == .dead)
            // Retrying every dead entry: the parent is pending again, so the child waits.
            #expect(Set(try await contract.storage.retry(ids: nil, now: contract.now)) == [parents[0], dies])
            #expect(try await state(contract, dies) == .blocked)
            // Purging a parent unsent: a waiting child dies (nothing can retry it), one that proceeds goes.
            let waits = try await contract.insert([Spec(after: [parents[1]], whenParentDies: .wait)])[0]
            let proceeds = try await contract.insert([Spec(after: [parents[1]], whenParentDies: .proceed)])[0]
            #expect(try await contract.storage.purge(.ids([parents[1]]), now: contract.now) == 1)
            let gone = try #require(try await contract.storage.entry(waits, now: contract.now))
            #expect(gone.state == .dead && gone.lastError == "entry \(parents[1]) it waits for was purged before it was delivered; not sent")
            #expect(try await state(contract, proceeds) == .pending)
            // A bulk purge of the other parent kills its child too.
            let change = try await contract.storage.change(.purge, matching: EntrySelection(states: [.pending]), now: contract.now, dryRun: false)
            #expect(change.ids.contains(parents[0]))
            #expect(try await state(contract, dies) == .dead)
        }
    }

    @Test("a blocked entry holds its group's later entries; retention of a delivered parent leaves its children's view of it delivered", arguments: StoreKind.allCases)
    func groupsAndRetention(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let parents = try await contract.insert([Spec(), Spec()])
            let ids = try await contract.insert([Spec(group: "note-1", after: parents), Spec(group: "note-1")])
            #expect(try await contract.claim().claimed.map(\.id) == parents, "the group's second entry waits behind its blocked head")
            _ = try await contract.settle([Settlement(id: parents[0], transition: Self.delivered)])
            // An hour on, as the retention conformance test does: PostgreSQL dates `finished_at` on
            // the server's clock, ahead of this manual clock by the time the test took so far.
            contract.clock.advance(by: .seconds(3600))
            let removed = try await contract.storage.deleteDelivered(finishedBefore: contract.now.wall.addingTimeInterval(-30))
            #expect(removed.deletedEntries == 1)
            #expect(try await contract.claim(settling: [Settlement(id: parents[1], transition: Self.delivered)]).claimed.map(\.id) == [ids[0]],
                    "the parent removed by retention still counts as delivered")
            #expect(try await contract.claim(settling: [Settlement(id: ids[0], transition: Self.delivered)]).claimed.map(\.id) == [ids[1]])
            // A child enqueued after its parent's delivery, the parent then removed by retention,
            // the child rejected and retried: the parent still counts as delivered.
            _ = try await contract.settle([Settlement(id: ids[1], transition: Self.delivered)])
            let late = try await contract.insert([Spec(after: [ids[1]])])[0]
            #expect(try await contract.claim().claimed.map(\.id) == [late])
            _ = try await contract.settle([Settlement(id: late, transition: Self.rejected)])
            contract.clock.advance(by: .seconds(3600))
            #expect(try await contract.storage.deleteDelivered(finishedBefore: contract.now.wall.addingTimeInterval(-30)).deletedEntries >= 1)
            #expect(try await contract.storage.retry(ids: [late], now: contract.now) == [late])
            #expect(try await state(contract, late) == .pending)
        }
    }

    @Test("an entry that waits for one the queue does not hold is refused with nothing stored; so is the whole batch", arguments: StoreKind.allCases)
    func missingParent(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let parent = try await contract.insert([Spec()])[0]
            let entries = [Spec(key: "fine").entry, Spec(key: "orphan", after: [parent, 9_999]).entry]
            await #expect(throws: QueueError.noSuchDependency(9_999)) {
                _ = try await contract.storage.insert(entries, now: contract.now)
            }
            #expect(try await contract.storage.counts(now: contract.now).total == 1, "nothing of the batch is stored")
            #expect(try await contract.storage.entry(idempotencyKey: "fine", now: contract.now) == nil)
        }
    }

    @Test("an entry that names its own id among those it waits for is refused with nothing stored", arguments: StoreKind.allCases)
    func waitsForItself(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let parents = try await contract.insert([Spec(), Spec()])
            // The id the next entry receives on every store, with nothing refused before it.
            let own = parents[1] + 1
            await #expect(throws: QueueError.dependencyCycle([own, own])) {
                _ = try await contract.insert([Spec(key: "self", after: [parents[0], own])])
            }
            #expect(try await contract.storage.counts(now: contract.now).total == 2, "nothing is stored")
            #expect(try await contract.storage.entry(idempotencyKey: "self", now: contract.now) == nil)
            #expect(try await contract.storage.dependencies(of: parents[0]) == EntryDependencies())
            // A later entry of the same call may wait for an earlier one, on every store (a
            // refused insert may use up an id on PostgreSQL: the next is read first).
            let last = try await contract.insert([Spec(key: "a")])[0]
            let next = try await contract.insert([Spec(key: "b"), Spec(key: "c", after: [last + 1])])
            #expect(next[0] == last + 1)
            #expect(try await state(contract, next[1]) == .blocked)
            #expect(try await contract.storage.dependencies(of: next[1]).parents == [next[0]])
        }
    }

    @Test("a replacement under a coalescing key that would close a loop is refused with nothing changed", arguments: StoreKind.allCases)
    func replacementClosingALoop(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            var first = Spec(key: "e1").entry
            first.coalescingKey = "k"
            let edited = try await contract.storage.insert([first], now: contract.now)[0].id
            let child = try await contract.insert([Spec(key: "child", after: [edited])])[0]
            let grandchild = try await contract.insert([Spec(key: "grandchild", after: [child])])[0]
            for (parent, loop) in [(child, [edited, child, edited]), (grandchild, [edited, grandchild, child, edited])] {
                var replacement = Spec(key: "e2-\(parent)", after: [parent]).entry
                replacement.coalescingKey = "k"
                await #expect(throws: QueueError.dependencyCycle(loop)) {
                    _ = try await contract.storage.insert([replacement], now: contract.now)
                }
            }
            let kept = try #require(try await contract.storage.entry(edited, now: contract.now))
            #expect(kept.idempotencyKey == "e1" && kept.state == .pending, "the waiting entry is as it was")
            #expect(try await contract.storage.dependencies(of: edited) == EntryDependencies(parents: [], children: [child]))
            let counts = try await contract.storage.counts(now: contract.now)
            #expect(counts.total == 3 && counts.superseded == 0 && counts.blocked == 2)
            // A replacement that waits for an entry outside the loop is fine.
            let other = try await contract.insert([Spec(key: "other")])[0]
            var fine = Spec(key: "e3", after: [other]).entry
            fine.coalescingKey = "k"
            #expect(try await contract.storage.insert([fine], now: contract.now)[0].id == edited)
            #expect(try await state(contract, edited) == .blocked)
        }
    }
}
