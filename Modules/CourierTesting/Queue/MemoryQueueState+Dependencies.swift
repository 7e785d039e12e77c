import Foundation
import OfflineQueueCore

/// Entries that wait for others, as the rule decides (``DependencyRule``).
extension MemoryQueueState {
    /// The blocked entries among `ids` become what the rule says; a death cascades to the
    /// children of the entry that died.
    mutating func resolve(_ ids: [EntryID], now: QueueTime) {
        var next = ids
        while let id = next.popLast() {
            guard let row = rows[id], row.entry.state == .blocked, let link = links[id] else { continue }
            let parents = link.parents.map { parent in
                DependencyRule.Parent(
                    id: parent, state: deliveredParents.contains(parent) ? .delivered : rows[parent]?.entry.state,
                    policy: linkPolicies[id]?[parent]
                )
            }
            switch DependencyRule.verdict(parents: parents, policy: link.policy) {
            case .blocked:
                continue
            case .due:
                rows[id]?.entry.state = .pending
            case .dead(let dead):
                rows[id]?.entry.state = .dead
                rows[id]?.entry.deadReason = dead.reason
                rows[id]?.entry.lastError = dead.error
                rows[id]?.entry.finishedAt = now.wall
                next.append(contentsOf: children[id] ?? [])
            }
        }
    }

    /// The children of `parents`, settled, retried or deleted.
    mutating func resolveChildren(of parents: some Sequence<EntryID>, now: QueueTime) {
        resolve(parents.flatMap { children[$0].map(Array.init) ?? [] }, now: now)
    }

    /// The links whose child and parent are both blocked.
    func readBlockedLinks() -> [DependencyRule.Link] {
        links.flatMap { child, link in
            guard rows[child]?.entry.state == .blocked else { return [DependencyRule.Link]() }
            return link.parents.filter { rows[$0]?.entry.state == .blocked && !deliveredParents.contains($0) }
                .map { DependencyRule.Link(child: child, parent: $0) }
        }
    }

    /// The blocked entries among `ids` stop waiting: their links are dropped, and each is due
    /// now (a release, ``BulkOperation/release``).
    mutating func release(_ ids: [EntryID], now: QueueTime) {
        for id in ids where rows[id]?.entry.state == .blocked {
            for parent in links.removeValue(forKey: id)?.parents ?? [] { children[parent]?.remove(id) }
            linkPolicies[id] = nil
            rows[id]?.entry.state = .pending
            rows[id]?.entry.nextAttemptAt = now.wall
            rows[id]?.due = now.uptime
        }
    }

    /// The entries `id` waits for and those that wait for it, in id order.
    func readDependencies(of id: EntryID) -> EntryDependencies {
        EntryDependencies(
            parents: links[id]?.parents ?? [], children: (children[id] ?? []).sorted(), whenParentDies: links[id]?.policy
        )
    }
}
