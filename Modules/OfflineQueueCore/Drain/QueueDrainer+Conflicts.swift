import Foundation
import HTTPCore

/// Conflicts the app decides: an answer the entry's ``StatusRules`` call a conflict goes to the
/// queue's ``QueueConflict/Resolver`` inside the attempt, while the drainer still holds the entry, and
/// its decision becomes the attempt's settlement, recorded in the drain's next commit.
extension QueueDrainer {
    /// The queue's resolver, and how a request it answers with is prepared: as an enqueue
    /// prepares one (validated, sealed when the queue seals, its body stored), by the queue.
    struct ConflictHandling: Sendable {
        let resolver: QueueConflict.Resolver
        let prepare: @Sendable (QueuedRequest, QueueEntry) async throws(QueueError) -> NewEntry
    }

    /// Where an attempt puts the conflict it met, with what the resolver needs: a box only an
    /// attempt under a resolver carries. Written and read by the attempt's one task.
    final class ConflictBox: @unchecked Sendable {
        var met: QueueConflict?
    }

    /// The request an attempt sent, as a resolver sees it and may change it: `request` (the
    /// entry opened, values from its parents taken, header templates not yet resolved) with
    /// `body`, and the entry's name, scopes, timeout, trace and options. Its idempotency key
    /// is left for the new request to get its own (a server that remembers keys would answer
    /// the old one's conflict again).
    static func conflicted(_ request: QueueEntry, body: RequestBody?, of entry: QueueEntry, response: Response<Data>) -> QueueConflict {
        var options = EnqueueOptions(group: entry.group, priority: entry.priority, keepResponse: entry.keepResponse)
        options.delivery = entry.delivery
        var queued = QueuedRequest(
            method: request.method, url: request.url, headers: request.headers.map { ($0.name, $0.value) }, body: body,
            scopes: entry.scopes, name: entry.name, timeout: entry.timeout, options: options
        )
        queued.traceContext = entry.traceContext
        return QueueConflict(entry: entry, request: queued, response: response)
    }

    /// What a conflict of `entry` becomes: the resolver's decision when it met one, or an entry
    /// left for an operator. A request the resolver answers with that cannot be prepared (it
    /// is invalid, or the disk is full) leaves the entry for an operator, the reason in its
    /// last error.
    func settle(
        _ conflict: EntryLifecycle.Transition.Conflict, of entry: QueueEntry, met: QueueConflict?, handling: ConflictHandling?
    ) async -> (EntryLifecycle.Transition, Settlement.Replacement?) {
        guard let handling, let met else { return (.conflict(conflict), nil) }
        switch await handling.resolver(met) {
        case .leave:
            return (.conflict(conflict), nil)
        case .drop:
            var dropped = conflict
            dropped.error = "\(conflict.error); dropped by the app's conflict resolver, never sent again"
            return (.drop(dropped), nil)
        case .fail:
            return (.deadLetter(.init(.conflict, status: conflict.status, error: "\(conflict.error); the app's conflict resolver let it die",
                                      excerpt: conflict.excerpt)), nil)
        case .send(let request):
            do throws(QueueError) {
                let new = try await handling.prepare(request, entry)
                let reason = "answered HTTP \(conflict.status) (a conflict); replaced by the app's conflict resolver with a new request, now entry \(entry.id)"
                let retry = EntryLifecycle.Transition.Retry(after: .zero, status: conflict.status, error: "\(conflict.error); sent again as the conflict resolver rewrote it",
                                             excerpt: conflict.excerpt)
                return (.retry(retry), Settlement.Replacement(entry: new, reason: reason))
            } catch {
                var left = conflict
                left.error = "\(conflict.error); the conflict resolver's request was refused: \(error)"
                return (.conflict(left), nil)
            }
        }
    }
}
