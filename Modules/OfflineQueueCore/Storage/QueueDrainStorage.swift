package import HTTPCore

/// The drain's role of the storage contract (``QueueStorage``): take a hold that dies with the
/// drainer, claim due entries under a lease, record what became of them, renew or give back
/// what it holds, and hear about work.
///
/// One commit per turn of the drain records the last turn's settlements and claims the next
/// entries in one transaction:
///
/// ```swift
/// try await store.acquireOwnership()
/// var result = try await store.settleAndClaim([], now: clock.now(), claimLimit: 16, lease: .seconds(60),
///                                             attemptedSince: nil, chores: ClaimChores(carryOver: true))
/// // … send result.claimed, ask EntryLifecycle what each outcome means …
/// result = try await store.settleAndClaim(settlements, now: clock.now(), claimLimit: 16, lease: .seconds(60),
///                                         attemptedSince: nil, chores: ClaimChores())
/// // result.lost: settlements whose lease this drainer no longer held, recorded by no one.
/// ```
package protocol QueueDrainStorage: QueueBodyReading {
    /// How this drainer is named in the entries it claims.
    var owner: String { get }

    /// Takes this drainer's hold on its claims, which dies with it (a kernel lock on the
    /// file's host; a connection's advisory lock on PostgreSQL), unless held already. Called
    /// before the first claim, so every entry naming ``owner`` was claimed while the hold was
    /// held. A store that lost its hold (a cut connection) takes a new one under a new name.
    func acquireOwnership() async throws(QueueError)

    /// Calls `wake` whenever another drainer's process enqueues, where the store can tell at
    /// once (PostgreSQL's `LISTEN`/`NOTIFY`, SQLite's wake file); a store that cannot never
    /// calls it, and a service then looks at its poll interval.
    func observeRemoteEnqueues(_ wake: @escaping @Sendable () -> Void)

    /// Records `settlements`, runs `chores`, and claims up to `claimLimit` due entries for
    /// ``owner`` under `lease`, in one transaction: the highest priority first, then the
    /// oldest, only the first open entry of each group, none a pause holds, never one claimed
    /// by another drainer, none whose origin is paused or at its limit, or whose circuit is open
    /// but for its probe (``FlowControl``, ``OriginHealth``). A settlement that closes an
    /// origin's circuit makes every pending entry of the origin due at once, in the same
    /// transaction.
    /// `attemptedSince` (a boot-clock reading) skips entries attempted since then. A commit
    /// that reclaims (``ClaimChores/reclaimOrphans``) and claims returns the lapsed leases of
    /// other drainers to pending first. Settlements' answers change their origins' flow
    /// (``Settlement/flowSignal``) before the claim.
    func settleAndClaim(
        _ settlements: [Settlement], now: QueueTime, claimLimit: Int, lease: Duration, attemptedSince: Double?, chores: ClaimChores
    ) async throws(QueueError) -> ClaimResult
    /// Records `settlements` alone. One whose claim ``owner`` no longer holds changes nothing;
    /// those ids are returned.
    func settle(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID>
    /// Sets aside the space that lets a drain record what it sent when the disk fills
    /// (``settleOnFullDisk(_:now:)``), unless it is set aside already: on SQLite a preallocated
    /// file beside the queue. A store whose disk is not the caller's (PostgreSQL), or that
    /// keeps no disk (memory), keeps none.
    ///
    /// - Throws: ``QueueError/diskFull(path:)`` when the disk has no room for it: the drain
    ///   then sends nothing, since it could not be sure to record what it sent.
    func holdReserve() async throws(QueueError)
    /// Records `settlements` after a commit of the drain failed with a full disk, in the space
    /// ``holdReserve()`` set aside, which it gives back first. Returns, as ``settle(_:now:)``
    /// does, the ids whose claim ``owner`` no longer holds.
    ///
    /// Settlements are written in order, each as soon as it can be, so those before a failure
    /// stay recorded when it throws.
    func settleOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID>
    /// Stores `limits` as the queue's limits by origin (``FlowControl/limits``), replacing the
    /// stored ones, in one transaction; an origin's bucket keeps its tokens.
    func storeOriginLimits(_ limits: [OriginLimit], now: QueueTime) async throws(QueueError)
    /// Makes the entries that wait only for the network due now. Returns how many.
    func wakeNetworkWaiters(now: QueueTime) async throws(QueueError) -> Int
    /// Extends ``owner``'s leases on `ids` to `lease` from `now`; entries it lost are left alone.
    func renewLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError)
    /// The responses `ids` kept at their delivery, each with the entry that kept it (whose
    /// key opens it when it is sealed), for a child that takes values from them
    /// (``QueueEntry/responseSources``). An id that kept none, is not delivered, or is gone is
    /// absent.
    func keptResponses(of ids: [EntryID], now: QueueTime) async throws(QueueError) -> [EntryID: ParentResponse]
}

/// A response a parent kept, with the parent (``QueueDrainStorage/keptResponses(of:now:)``).
package struct ParentResponse: Sendable {
    package var entry: QueueEntry
    package var response: StoredResponse

    package init(entry: QueueEntry, response: StoredResponse) {
        self.entry = entry
        self.response = response
    }
}

extension QueueDrainStorage where Self: QueueOperatorStorage & QueueOutcomeStorage {
    /// Two reads an id: a child takes values from few parents, and only such a child asks.
    package func keptResponses(of ids: [EntryID], now: QueueTime) async throws(QueueError) -> [EntryID: ParentResponse] {
        var found: [EntryID: ParentResponse] = [:]
        for id in ids {
            guard let response = try await keptResponse(of: id), let entry = try await entry(id, now: now) else { continue }
            found[id] = ParentResponse(entry: entry, response: response)
        }
        return found
    }
}

/// Reading a stored body back: a drain's sends and a re-sealing both do.
package protocol QueueBodyReading: Sendable {
    /// The body of a stored entry, as the request sent at replay streams it.
    func replayBody(_ body: StoredBody) throws(QueueError) -> RequestBody
}

/// One finished attempt, to record.
package struct Settlement: Sendable {
    package var id: EntryID
    package var transition: Transition
    /// The response a delivered entry keeps (``QueueEntry/keepResponse``), stored in the
    /// transaction that records the delivery; `nil` for every other.
    package var kept: StoredResponse?
    /// The request a conflict resolver answered with (``ConflictResolution/send(_:)``), for a
    /// ``Transition/retry(_:)``: the store records the retry, then writes it in the entry's
    /// place as a coalescing enqueue does (its old request kept as a superseded entry), in the
    /// same transaction. `nil` for every other.
    package var replacement: Replacement?
    /// The entry's stored URL, whose origin an answer may pause or slow (``flowSignal``);
    /// `nil` when the drain did not send it.
    package var url: String?
    /// The attempt failed below HTTP in a way that says the server is unwell (a reset, a refused
    /// connection, a timeout, a TLS handshake that failed but for the certificate), in words:
    /// it counts towards the origin's circuit (``OriginHealth``). `nil` for every other.
    package var unwell: String?
    /// The entry went as its origin's probe (``ClaimResult/probes``): its answer closes the
    /// circuit, or puts the next probe further off.
    package var probe = false
    /// Where in its range an answer that fails the origin puts the next probe (in `0..<1`;
    /// ``OriginFlow/record(_:now:wall:inflight:settings:jitter:)``): drawn by the drain for such
    /// answers only, 0.5 (no jitter) for every other.
    package var jitter = 0.5

    package init(id: EntryID, transition: Transition, kept: StoredResponse? = nil, replacement: Replacement? = nil, url: String? = nil) {
        self.url = url
        self.id = id
        self.transition = transition
        self.kept = kept
        self.replacement = replacement
    }

    /// A conflict resolver's new request, prepared as an enqueue prepares one.
    package struct Replacement: Sendable {
        package var entry: NewEntry
        /// The superseded copy's last error: what replaced it.
        package var reason: String

        package init(entry: NewEntry, reason: String) {
            self.entry = entry
            self.reason = reason
        }
    }
}

extension Settlement {
    /// Whether it ends its entry (a delivery or a death): what those awaiting outcomes hear of
    /// (``QueueOutcomeStorage/observeSettlements(_:)``).
    package var ends: Bool {
        switch transition {
        case .deliver, .deadLetter, .drop: true
        case .retry, .release, .conflict: false
        }
    }
}

/// What a claim does besides claiming.
package struct ClaimChores: Sendable {
    /// Carry rows of another boot over to this one (at the start of a drain; a store whose
    /// time does not depend on the boot has nothing to do).
    package var carryOver = false
    /// Take back the entries of drainers that are gone (at most about once a second) and, when
    /// the commit claims, the lapsed leases of other drainers (one that lives but hangs): the
    /// rule PostgreSQL's one statement keeps, and so every store.
    package var reclaimOrphans = false
    /// The longest wait a row from another boot may keep (the policy's longest delay).
    package var maxDelay: Duration = .seconds(3600)
    /// How answers change their origins' flow, and the drainer's concurrency (``FlowControl``).
    package var flow = FlowSettings()

    package init(carryOver: Bool = false, reclaimOrphans: Bool = false, maxDelay: Duration = .seconds(3600), flow: FlowSettings = FlowSettings()) {
        self.flow = flow
        self.carryOver = carryOver
        self.reclaimOrphans = reclaimOrphans
        self.maxDelay = maxDelay
    }
}

/// What one ``QueueDrainStorage/settleAndClaim(_:now:claimLimit:lease:attemptedSince:chores:)`` did.
package struct ClaimResult: Sendable {
    /// Settlements whose lease this drainer no longer held.
    package var lost: Set<EntryID> = []
    /// Entries claimed, in claim order.
    package var claimed: [QueueEntry] = []
    /// Entries taken back from drainers that are gone.
    package var reclaimed = 0
    /// When the claim passed over due entries because their origin is paused or at its limit:
    /// how long until the soonest of those origins frees by time alone (a pause's end, a
    /// limit's next token); `nil` when nothing was held, or only by a concurrency cap.
    package var heldFor: Duration?
    /// The origins a `Retry-After` pauses now, or whose circuit is open (reported by a claim
    /// while any origin's flow is held): the drain gives back what it holds of them unsent.
    package var pausedOrigins: [String] = []
    /// How long until the soonest next probe of an open circuit (``OriginHealth``), when one
    /// is to come: apart from ``heldFor``, which a drain waits for when it is short, because a
    /// probe is the service's to wait for.
    package var probeIn: Duration?
    /// Of ``claimed``, the entries that go as their origin's probe: one for an open circuit
    /// whose probe is due, for the whole queue.
    package var probes: Set<EntryID> = []
    /// The origins whose circuit this commit's settlements opened, and closed (a probe
    /// delivered): once each, for the one log line and event that says so.
    package var opened: [String] = []
    package var closed: [String] = []

    package init(lost: Set<EntryID> = [], claimed: [QueueEntry] = [], reclaimed: Int = 0, heldFor: Duration? = nil) {
        self.heldFor = heldFor
        self.lost = lost
        self.claimed = claimed
        self.reclaimed = reclaimed
    }
}
