package import HTTPCore

/// The drain's role of the storage contract (``QueueStorage``): take a hold that dies with the
/// drainer, claim due entries under a lease, record what became of them, renew or give back
/// what it holds, and hear about work.
///
/// One commit per turn of the drain records the last turn's settlements and claims the next
/// entries in one transaction:
///
/// ```swift
/// _ = try await store.prepareDrain(DrainPreparation(), now: clock.now())
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

    /// What a drain asks of the store before its first claim, in one call
    /// (``DrainPreparation``): take this drainer's hold on its claims, which dies with it (a
    /// kernel lock on the file's host; a connection's advisory lock on PostgreSQL), unless held
    /// already, and set aside the space that lets a drain record what it sent when the disk
    /// fills (SQLite's preallocated file beside the queue; a store whose disk is not the
    /// caller's, or that keeps none, keeps none); store the fleet's limits by origin, replacing
    /// the stored ones (an origin's bucket keeps its tokens); make the entries that wait only
    /// for the network due now. Every entry naming ``owner`` was claimed while the hold was
    /// held; a store that lost its hold (a cut connection) takes a new one under a new name.
    ///
    /// Returns how many entries waiting for the network it made due.
    ///
    /// - Throws: ``QueueError/diskFull(path:)`` when the disk has no room for the reserve: the
    ///   drain then sends nothing, since it could not be sure to record what it sent.
    func prepareDrain(_ preparation: DrainPreparation, now: QueueTime) async throws(QueueError) -> Int

    /// Calls `wake` at each `signal` (``StoreSignal``) until the watch returned stops or goes:
    /// whenever another process enqueues, or an entry is delivered, dies or goes, where the
    /// store can tell at once (PostgreSQL's `LISTEN`/`NOTIFY`, SQLite's wake and settled
    /// files). A store that cannot never calls it and returns a watch that is not live
    /// (``SettlementWatch/isLive``): a service then looks at its poll interval, a waiter for an
    /// outcome looks again often.
    func observe(_ signal: StoreSignal, _ wake: @escaping @Sendable () -> Void) -> SettlementWatch

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
    ///
    /// A commit renews the leases its chores name (``ClaimChores/renewing``) first. One whose
    /// chores claim nothing (``ClaimChores/claims`` false) records
    /// `settlements` alone; one whose claim ``owner`` no longer holds changes nothing, and its
    /// id comes back in ``ClaimResult/lost``. After a commit failed with a full disk
    /// (``ClaimChores/onFullDisk``) the store records them in the space the drain's
    /// preparation set aside, which it gives back first, in order, each as soon as it can be,
    /// so those before a failure stay recorded when it throws.
    func settleAndClaim(
        _ settlements: [Settlement], now: QueueTime, claimLimit: Int, lease: Duration, attemptedSince: Double?, chores: ClaimChores
    ) async throws(QueueError) -> ClaimResult
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
    package var transition: EntryLifecycle.Transition
    /// The response a delivered entry keeps (``QueueEntry/keepResponse``), stored in the
    /// transaction that records the delivery; `nil` for every other.
    package var kept: StoredResponse?
    /// The request a conflict resolver answered with (``QueueConflict/Resolution/send(_:)``), for a
    /// ``EntryLifecycle/Transition/retry(_:)``: the store records the retry, then writes it in the entry's
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

    package init(id: EntryID, transition: EntryLifecycle.Transition, kept: StoredResponse? = nil, replacement: Replacement? = nil, url: String? = nil) {
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
    /// Whether the commit claims at all: false records the settlements alone (a drain that
    /// stops, or one whose disk filled).
    package var claims = true
    /// Records the settlements in the space set aside for a full disk (and claims nothing).
    package var onFullDisk = false
    /// Extends ``QueueDrainStorage/owner``'s leases on these entries to the commit's lease from
    /// its `now`, first; entries it lost are left alone.
    package var renewing: [EntryID] = []
    /// Take back the entries of drainers that are gone (at most about once a second) and, when
    /// the commit claims, the lapsed leases of other drainers (one that lives but hangs): the
    /// rule PostgreSQL's one statement keeps, and so every store.
    package var reclaimOrphans = false
    /// The longest wait a row from another boot may keep (the policy's longest delay).
    package var maxDelay: Duration = .seconds(3600)
    /// How answers change their origins' flow, and the drainer's concurrency (``FlowControl``).
    package var flow = FlowSettings()

    package init(
        claims: Bool = true, onFullDisk: Bool = false, carryOver: Bool = false, reclaimOrphans: Bool = false, maxDelay: Duration = .seconds(3600),
        flow: FlowSettings = FlowSettings()
    ) {
        self.claims = claims
        self.onFullDisk = onFullDisk
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

/// What ``QueueDrainStorage/prepareDrain(_:now:)`` does before a drain's first claim.
package struct DrainPreparation: Sendable {
    /// Take the drainer's hold (and, where the store keeps one, the full-disk reserve).
    package var takesOwnership = true
    /// Make the entries that wait only for the network due now.
    package var wakesNetworkWaiters = false
    /// The fleet's limits by origin to store, replacing the stored ones; nil leaves them.
    package var originLimits: [FlowControl.OriginLimit]?

    package init(takesOwnership: Bool = true, wakesNetworkWaiters: Bool = false, originLimits: [FlowControl.OriginLimit]? = nil) {
        self.takesOwnership = takesOwnership
        self.wakesNetworkWaiters = wakesNetworkWaiters
        self.originLimits = originLimits
    }
}

/// The drain's calls as the engine and the tests spell them, each one commit or preparation.
extension QueueDrainStorage {
    /// Records `settlements` alone; returns the ids whose claim ``owner`` no longer holds.
    package func settle(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        guard !settlements.isEmpty else { return [] }
        return try await settleAndClaim(
            settlements, now: now, claimLimit: 0, lease: .zero, attemptedSince: nil, chores: ClaimChores(claims: false)
        ).lost
    }

    /// Records `settlements` after a commit failed with a full disk (``ClaimChores/onFullDisk``).
    package func settleOnFullDisk(_ settlements: [Settlement], now: QueueTime) async throws(QueueError) -> Set<EntryID> {
        try await settleAndClaim(
            settlements, now: now, claimLimit: 0, lease: .zero, attemptedSince: nil, chores: ClaimChores(claims: false, onFullDisk: true)
        ).lost
    }

    /// Stores the fleet's limits by origin, and nothing else.
    package func storeOriginLimits(_ limits: [FlowControl.OriginLimit], now: QueueTime) async throws(QueueError) {
        _ = try await prepareDrain(DrainPreparation(takesOwnership: false, originLimits: limits), now: now)
    }

    /// Extends ``owner``'s leases on `ids` to `lease` from `now`; entries it lost are left alone.
    package func renewLeases(_ ids: [EntryID], now: QueueTime, lease: Duration) async throws(QueueError) {
        guard !ids.isEmpty else { return }
        var chores = ClaimChores(claims: false)
        chores.renewing = ids
        _ = try await settleAndClaim([], now: now, claimLimit: 0, lease: lease, attemptedSince: nil, chores: chores)
    }

    /// Makes the entries that wait only for the network due now, and nothing else. Returns how many.
    @discardableResult
    package func wakeNetworkWaiters(now: QueueTime) async throws(QueueError) -> Int {
        try await prepareDrain(DrainPreparation(takesOwnership: false, wakesNetworkWaiters: true), now: now)
    }
}

/// What ``QueueDrainStorage/observe(_:_:)`` hears.
package enum StoreSignal: Sendable, Hashable {
    /// Another process enqueued (a drainer's process hears it once it drains).
    case remoteEnqueues
    /// Entries were delivered, died or went.
    case settlements
}

extension QueueDrainStorage {
    /// Wakes a drainer when another process enqueues, for as long as the store lives.
    package func observeRemoteEnqueues(_ wake: @escaping @Sendable () -> Void) {
        _ = observe(.remoteEnqueues, wake)
    }

    /// Wakes an outcome's waiter when entries settle, until the watch stops.
    package func observeSettlements(_ wake: @escaping @Sendable () -> Void) async -> SettlementWatch {
        observe(.settlements, wake)
    }
}
