/// The rule for entries that wait for others (``EnqueueOptions/after``), decided here once for
/// every store: whether a child is still blocked, due, or dead because a parent died. A store
/// applies the verdict in the transaction that settles, retries or purges a parent, and at
/// enqueue, and asks again for the children of every child that died (the death cascades);
/// a child made due cascades nothing, since its own children wait for its delivery.
package enum DependencyRule {
    /// What a child's parent is, as the store reads it in the deciding transaction.
    package struct Parent: Sendable, Hashable {
        package var id: EntryID
        /// `nil`: the parent is no longer stored (purged, or removed by retention).
        package var state: EntryState?
        /// The policy of this link when it is not the child's own: a newer edit waiting behind
        /// an in-flight one under its coalescing key goes once that one is settled (``ParentDeathPolicy/proceed``).
        package var policy: ParentDeathPolicy?

        package init(id: EntryID, state: EntryState?, policy: ParentDeathPolicy? = nil) {
            self.id = id
            self.state = state
            self.policy = policy
        }
    }

    /// What a blocked child becomes.
    package enum Verdict: Sendable, Hashable {
        /// Some parent is not settled yet (or is dead and the policy waits for its retry).
        case blocked
        /// Every parent is delivered, or dead and the policy proceeds.
        case due
        /// A parent died (or was purged unsent) and the policy dies with it.
        case dead(EntryLifecycle.Transition.DeadLetter)
    }

    /// The verdict for a child whose parents are `parents` and whose policy is `policy`. A
    /// parent gone from the store before its child was released was purged unsent (a delivered
    /// parent releases its children in the transaction that records its delivery): it counts as
    /// dead, and a policy that waits for a retry dies instead, since nothing can retry it.
    package static func verdict(parents: [Parent], policy: ParentDeathPolicy) -> Verdict {
        var blocked = false
        for parent in parents.sorted(by: { $0.id < $1.id }) {
            let policy = parent.policy ?? policy
            switch parent.state {
            case .delivered:
                continue
            case .dead, .superseded, nil:
                // A superseded parent (replaced unsent, or dropped after a conflict) cannot be
                // retried: as purged.
                let purged = parent.state == nil || parent.state == .superseded
                if policy == .die || (purged && policy == .wait) {
                    return .dead(deadLetter(parent: parent.id, purged: purged))
                }
                if policy == .wait { blocked = true }
            case .pending, .inflight, .blocked, .conflict:
                // A conflict is settled by an app or an operator, not yet.
                blocked = true
            }
        }
        return blocked ? .blocked : .due
    }

    /// Why a child died with its parent.
    package static func deadLetter(parent: EntryID, purged: Bool) -> EntryLifecycle.Transition.DeadLetter {
        let what = purged ? "was purged before it was delivered" : "is dead"
        return EntryLifecycle.Transition.DeadLetter(.parentDead, consumesAttempt: false, error: "entry \(parent) it waits for \(what); not sent")
    }

    /// The most entries one entry may wait for.
    public static let maxParents = 64

    /// A link between two entries: `child` waits for `parent`.
    package struct Link: Sendable, Hashable {
        package var child: EntryID
        package var parent: EntryID
        /// What the child does when this parent dies, where the store read it.
        package var whenParentDies: ParentDeathPolicy?

        package init(child: EntryID, parent: EntryID, whenParentDies: ParentDeathPolicy? = nil) {
            self.child = child
            self.parent = parent
            self.whenParentDies = whenParentDies
        }
    }

    /// `dependencies` of entry `id` as links: to each parent, with its policy, and from each child.
    package static func links(of id: EntryID, _ dependencies: EntryDependencies) -> [Link] {
        dependencies.parents.map { Link(child: id, parent: $0, whenParentDies: dependencies.whenParentDies) }
            // An entry that waits for itself is its own child: one link, read both ways.
            + dependencies.children.filter { $0 != id }.map { Link(child: $0, parent: id) }
    }

    /// The loop `child` would close by waiting for `parents` as well: the entries from `child`
    /// round to itself, each waiting for the next (`[3, 3]` for an entry that names itself,
    /// `[1, 2, 1]` for 1 waiting for 2, which waits for 1); `nil` when it closes none. A store
    /// refuses such a link in the transaction that would make it (an enqueue, a replacement under
    /// a coalescing key), before anything is written.
    ///
    /// - Parameter below: the links under `child`: every link whose parent is `child` or waits
    ///   for it, at any depth (a store reads them with one recursive query). A new entry has
    ///   none.
    package static func loop(child: EntryID, parents: [EntryID], below: [Link]) -> [EntryID]? {
        if parents.contains(child) { return [child, child] }
        var waiters: [EntryID: [EntryID]] = [:]
        for link in below { waiters[link.parent, default: []].append(link.child) }
        // Walk down from `child`, breadth first, noting for each entry reached the one it waits
        // for on the way: the shortest loop is found first.
        var waitsFor: [EntryID: EntryID] = [:]
        var frontier = [child]
        while !frontier.isEmpty {
            var next: [EntryID] = []
            for parent in frontier {
                for waiter in (waiters[parent] ?? []).sorted() where waiter != child && waitsFor[waiter] == nil {
                    waitsFor[waiter] = parent
                    next.append(waiter)
                }
            }
            frontier = next
        }
        guard let closing = parents.sorted().first(where: { waitsFor[$0] != nil }) else { return nil }
        var loop = [child, closing]
        var at = closing
        while let up = waitsFor[at] {
            loop.append(up)
            at = up
        }
        return loop
    }

    /// Of the blocked entries, those nothing will release: each waits, directly or through other
    /// blocked entries, for an entry that waits for itself. (A blocked entry whose parents all
    /// settle is released when they do; one that waits, through others, for a loop never is.)
    /// Queues written before loops were refused may hold such entries; an operator releases
    /// (``OfflineQueue/release(_:)``) or purges them.
    ///
    /// - Parameter links: the links whose child and parent are both blocked.
    package static func stuck(_ links: [Link]) -> Set<EntryID> {
        var blockedParents: [EntryID: Int] = [:]
        var waiters: [EntryID: [EntryID]] = [:]
        for link in Set(links) {
            blockedParents[link.child, default: 0] += 1
            blockedParents[link.parent, default: 0] += 0
            waiters[link.parent, default: []].append(link.child)
        }
        // Released in time: an entry whose blocked parents are all released in time.
        var free = blockedParents.filter { $0.value == 0 }.map(\.key)
        while let entry = free.popLast() {
            blockedParents[entry] = nil
            for waiter in waiters[entry] ?? [] {
                guard let left = blockedParents[waiter] else { continue }
                blockedParents[waiter] = left - 1
                if left == 1 { free.append(waiter) }
            }
        }
        return Set(blockedParents.keys)
    }
}
