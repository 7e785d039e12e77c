/// The rule for entries that wait for others (``EnqueueOptions/after``), decided here once for
/// every store: whether a child is still blocked, due, or dead because a parent died. A store
/// applies the verdict in the transaction that settles, retries or purges a parent, and at
/// enqueue, and asks again for the children of every child that died (the death cascades);
/// a child made due cascades nothing, since its own children wait for its delivery.
public enum DependencyRule {
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
        case dead(Transition.DeadLetter)
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
    package static func deadLetter(parent: EntryID, purged: Bool) -> Transition.DeadLetter {
        let what = purged ? "was purged before it was delivered" : "is dead"
        return Transition.DeadLetter(.parentDead, consumesAttempt: false, error: "entry \(parent) it waits for \(what); not sent")
    }

    /// The most entries one entry may wait for.
    public static let maxParents = 64
}
