public import Foundation
public import HTTPCore

/// An answer the policy's ``StatusRules`` call a conflict (409 and 412 unless set otherwise),
/// handed to the queue's ``QueueConflict/Resolver`` while the entry is still held by the drainer
/// that sent it.
public struct QueueConflict: Sendable {
    /// The entry as claimed: its id, attempts, group, and the rest. Its ``QueueEntry/url`` and
    /// headers are the stored ones; ``request`` is what went out.
    public var entry: QueueEntry
    /// The request as it was sent (opened when the entry is sealed, its templates not yet
    /// resolved), with the entry's name, scopes, timeout and options: change what the answer
    /// calls for and return it as ``QueueConflict/Resolution/send(_:)``.
    public var request: QueuedRequest
    /// The server's answer: its status, its header fields (`ETag`, say) and its body.
    public var response: Response<Data>

    /// The conflict of `entry`, whose `request` got `response`.
    public init(entry: QueueEntry, request: QueuedRequest, response: Response<Data>) {
        self.entry = entry
        self.request = request
        self.response = response
    }
}

extension QueueConflict {
    /// What a ``QueueConflict/Resolver`` decides.
    public enum Resolution: Sendable {
        /// Send this request in the entry's place: it keeps the entry's id, its place in its
        /// group and the entries that wait for it, with a fresh attempt budget; the request that
        /// conflicted is kept as a ``EntryState/superseded`` entry of its own. Its options'
        /// ``EnqueueOptions/after`` and ``EnqueueOptions/coalescingKey`` are not read: the entry
        /// keeps its own.
        case send(QueuedRequest)
        /// Drop the entry: ``EntryState/superseded``, never sent again (those awaiting its outcome
        /// hear ``EntryOutcome/superseded(error:)``; the entries that wait for it are decided as
        /// for a purged one).
        case drop
        /// Let it die: ``EntryState/dead`` with ``EntryLifecycle/DeadReason/conflict``.
        case fail
        /// Leave it for an operator: ``EntryState/conflict``.
        case leave
    }
}

extension QueueConflict {
    /// Decides what becomes of an entry whose answer was a conflict, in the drainer's process,
    /// before the attempt is recorded: re-read the resource (its new `ETag`), rebase the edit, and
    /// answer. It runs while the entry's lease is held and renewed; a process that dies meanwhile
    /// loses nothing (the entry is taken back and sent again, and answers the same).
    ///
    /// ```swift
    /// configuration.conflictResolver = { conflict in
    ///     guard conflict.response.status.code == 412 else { return .leave }
    ///     let etag = try? await fetchETag(of: conflict.request.url)
    ///     guard let etag else { return .leave }
    ///     var request = conflict.request
    ///     request.headers.removeAll { $0.name.lowercased() == "if-match" }
    ///     request.headers.append((name: "If-Match", value: etag))
    ///     return .send(request)
    /// }
    /// ```
    public typealias Resolver = @Sendable (QueueConflict) async -> QueueConflict.Resolution
}
