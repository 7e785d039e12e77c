package import Foundation
package import HTTPCore

/// The enqueue's role of the storage contract (``QueueStorage``): keep large bodies apart,
/// then insert the entries that point at them, all or none.
///
/// ```swift
/// var entry = NewEntry(idempotencyKey: key, method: "POST", url: url, headers: [], body: nil, scopes: [],
///                      name: "POST /events", group: nil, priority: 0, timeout: nil, notBefore: nil)
/// entry.body = try await store.storeBody(largeBody.makeStream())   // or .inline(data) when small
/// let tickets = try await store.insert([entry], now: clock.now())
/// if tickets[0].deduplicated, let body = entry.body { await store.discardBodies([body]) }
/// ```
package protocol QueueEnqueueStorage: Sendable {
    /// Inserts `entries` in one transaction: all or none. An entry whose idempotency key is
    /// stored already is not inserted; its ticket points at the stored entry
    /// (``Ticket/deduplicated``). Returns once the rows are durable, and wakes the drainers
    /// that watch the store (``QueueDrainStorage/observeRemoteEnqueues(_:)``).
    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket]
    /// Keeps a body too large for a row, streamed from `stream` without holding it whole
    /// where the store can (a file, chunks; the in-memory store holds it in memory); returns
    /// its reference (``StoredBody/file(name:length:)``) for ``insert(_:now:)``.
    func storeBody(_ stream: ByteStream) async throws(QueueError) -> StoredBody
    /// Forgets bodies stored for entries that were not inserted (a failed or deduplicated
    /// enqueue). Best effort: what remains is swept by
    /// ``QueueUpkeepStorage/sweepOrphanBodies()``.
    func discardBodies(_ bodies: [StoredBody]) async
}

/// A request on its way into the store: everything but what the store assigns.
package struct NewEntry: Sendable {
    package var idempotencyKey: String
    package var method: String
    package var url: String
    package var headers: [StoredHeader]
    package var body: StoredBody?
    package var scopes: [String]
    package var name: String
    package var group: String?
    package var priority: Int
    package var timeout: Duration?
    package var notBefore: Date?
    /// The entry's seal when it is sealed at rest: then `url` is its origin, `headers` empty,
    /// `body` sealed.
    package var seal: StoredSeal?
    /// The trace the request was enqueued in, stored in clear beside the request.
    package var traceContext: TraceContext?
    /// The entries this one waits for (none for most): the store checks each exists, records
    /// the links and inserts the entry as ``DependencyRule/verdict(parents:policy:)`` decides
    /// on the parents' states, in the insert's transaction.
    package var after: [EntryID] = []
    package var whenParentDies: ParentDeathPolicy = .die
    /// What of its delivery's response to keep (``ResponseKeeping/stored``); `nil` for most.
    package var keepResponse: ResponseKeeping?
    /// The values its request takes from its parents' kept responses (``ResponseReference``),
    /// each of a parent in ``after``; empty for most. The store checks, in the insert's
    /// transaction, that each parent keeps what is read of it (``ResponseReference/check(_:keeping:)``),
    /// and records ``responseSources``.
    package var references: [ResponseReference] = []
    /// Whether some of ``references`` stand in the body.
    package var bodyTakesValues = false
    /// Replaces the request waiting under this key (``EnqueueOptions/coalescingKey``), as
    /// ``CoalescingRule`` says; `nil` for most.
    package var coalescingKey: String?
    /// The entry's own delivery policy (``EnqueueOptions/delivery``), `nil` for most.
    package var delivery: EntryDelivery?

    /// The parents its references read, each once, in id order.
    package var responseSources: [EntryID] { Array(Set(references.map(\.entry))).sorted() }

    /// The stored form of ``responseSources`` and ``bodyTakesValues``; `nil` for most.
    package var storedResponseSources: String? {
        references.isEmpty ? nil : ResponseReference.stored(responseSources, body: bodyTakesValues)
    }

    package init(
        idempotencyKey: String, method: String, url: String, headers: [StoredHeader], body: StoredBody?, scopes: [String],
        name: String, group: String?, priority: Int, timeout: Duration?, notBefore: Date?, seal: StoredSeal? = nil,
        traceContext: TraceContext? = nil
    ) {
        self.idempotencyKey = idempotencyKey
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.scopes = scopes
        self.name = name
        self.group = group
        self.priority = priority
        self.timeout = timeout
        self.notBefore = notBefore
        self.seal = seal
        self.traceContext = traceContext
    }
}
