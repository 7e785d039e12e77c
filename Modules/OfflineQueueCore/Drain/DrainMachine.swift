/// The drain's decisions as a state machine: events in, one action out at a time. No clock
/// (time comes in as the `Duration` since the drain began), no I/O, no locks, no tasks; the
/// driver (``OfflineQueue/drain(_:concurrency:control:)``) performs each action and feeds
/// back what came of it.
///
/// The rules it keeps:
/// - **Claim ahead.** A claim asks for `batch` entries beyond `limit + reserve` claimed or
///   running, so one write transaction serves many sends; the next claim waits until no more
///   than `limit + reserve` are claimed or running (so `reserve` claimed entries are still in
///   hand while it runs), and, once a claim found fewer than it asked for, until nothing is.
/// - **One commit per turn.** Finished attempts are recorded together with the next claim,
///   once `batch` of them wait, `flushDelay` after the oldest finished, when the drain is
///   idle, or when it stops. One commit runs at a time, and sends start and finish while it
///   runs: those that finish meanwhile go into the next one.
/// - **Stop.** A stop, a failed commit, the monitor saying offline or a send finding the
///   network gone end claiming; claimed entries not started are given back; sends under way
///   run to their end (cancelling the drain's task cuts them short).
/// - **A full disk.** A commit or renewal that fails with ``QueueError/diskFull(path:)`` ends
///   claiming at once, and the drain still records the outcome of every send it made or has
///   under way, so that none is sent again: the failed commit's settlements and every later
///   one go into commits that claim nothing and are written with the space the store keeps
///   for this (``Commit/onFullDisk``), the outcomes of sends before the entries given back.
///   If such a commit fails too, or the failure was another one, nothing more is recorded
///   (the leases lapse, or the next drain takes the entries back). Either way the drain ends
///   with the failure.
/// - **Leases.** Each claimed entry's lease is renewed `renewal` after its claim or last
///   renewal, while it is held.
/// - **The end.** Idle, with nothing left to record, after a claim found nothing more, or
///   while stopping.
///
/// Where the drain stands with claiming is one value, ``Phase`` (claiming, drained, stopped,
/// failed with what may still be recorded); what it holds (claimed, running, to record, the
/// commit under way, lease times) is bookkeeping beside it.
struct DrainMachine {
    struct Settings: Sendable {
        /// Sends under way at most.
        var limit: Int
        /// Entries a claim asks for beyond `limit + reserve`, and finished attempts that are
        /// recorded at once: `limit` unless set. Larger batches share each commit's fixed cost
        /// (and, on SQLite, the pages it writes) among more entries.
        var batch: Int?
        /// Claimed entries still in hand, not started, when the next claim is made: 0 unless
        /// set, so sends do not wait for that claim's commit.
        var reserve = 0
        /// How long a finished attempt may wait to be recorded.
        var flushDelay: Duration = .milliseconds(50)
        /// When a held lease is renewed after its claim or last renewal; `nil`: never.
        var renewal: Duration?
        /// Entries of drainers that are gone are looked for at most this often.
        var reclaimInterval: Duration = .seconds(1)
        /// The longest wait a row from another boot may keep.
        var maxDelay: Duration
        /// How answers change their origins' flow (``FlowControl``).
        var flow = FlowSettings()
        /// The longest a drain waits for a held origin (a limit's next token) before it ends
        /// instead: longer holds (a `Retry-After` pause) are the service's to wait for.
        var longestHold: Duration = .seconds(1)
        /// Sends under way to one origin at most, by origin (``QueueConfiguration/sendsPerOrigin``,
        /// or the transport's `sendsAtOnce(toOrigin:)`), asked once per origin a drain meets: the
        /// others wait in hand, where a pause or an open circuit gives them back unsent, not in
        /// the transport's pool. `nil`: no cap, and none asked.
        var sendsPerOrigin: (@Sendable (Substring) -> Int?)?

        var claimBatch: Int { max(1, batch ?? limit) }
    }

    /// Record `settlements` and claim up to `claimLimit` entries (none when 0), in one
    /// transaction.
    struct Commit: Sendable {
        var settlements: [Settlement]
        var claimLimit: Int
        var chores: ClaimChores
        /// Record with the space kept for a full disk (``QueueDrainStorage/settleOnFullDisk(_:now:)``);
        /// such a commit claims nothing.
        var onFullDisk = false
    }

    /// What the drain may still record after a storage failure.
    enum Recording: Equatable {
        /// Everything: nothing failed.
        case all
        /// The disk filled: what was sent, with the space the store keeps for it.
        case onFullDisk
        /// Nothing: the failure was another one, or recording on the full disk failed too.
        case nothing
    }

    enum Action {
        case commit(Commit)
        /// Start a send for each of these claimed entries.
        case start([QueueEntry])
        /// Renew the leases of these entries.
        case renew([EntryID])
        /// Wait for the next event: a send finishing, a stop, the network changing, or (when
        /// given) this point in time, when there is something to do.
        case wait(until: Duration?)
        /// The drain is over; ``summary`` says what it did.
        case finish
    }

    /// Where the drain stands with claiming: one value, so that no two of its states can hold
    /// at once (a drain both drained and failed, say). Sends under way and outcomes to record
    /// go on in every phase; only claiming and what may be recorded depend on it.
    enum Phase: Equatable {
        /// Claiming as sends need entries; `exhausted`: the last claim found fewer than it asked
        /// for, so the next waits until nothing is held.
        case claiming(exhausted: Bool)
        /// A claim made while idle found nothing more: the drain ends as soon as it is idle with
        /// nothing to record. Until then claims go on as while claiming (the commit that records
        /// the last outcomes claims too: a group's next entry is claimable only once its head is
        /// recorded).
        case drained(exhausted: Bool)
        /// Claiming is over: a stop was asked for, or a send found the network gone.
        case stopped(StopReason)
        /// A store call failed, or a claimed entry could not be opened: claiming is over, the
        /// drain throws `error` at its end, and records only what `recording` allows.
        case failed(QueueError, recording: Recording)
    }

    enum StopReason: Equatable {
        /// ``DrainControl/stop()``, or the drain's task was cancelled.
        case requested
        /// A send found the network gone.
        case networkGone
    }

    let settings: Settings
    /// What the drain did so far: committed outcomes only.
    private(set) var summary = DrainSummary()
    private(set) var phase = Phase.claiming(exhausted: false)
    /// Whether the monitor says the network is there: claiming pauses while it does not.
    private var online: Bool

    /// Claimed, not started.
    private var ready = ReadyEntries()
    private var running = 0
    /// Finished attempts not yet recorded, and when the oldest finished.
    private var unsettled: [Settlement] = []
    private var oldestUnsettled: Duration?
    /// The commit the driver is performing.
    private var committing: Commit?
    /// When each held entry (ready or running) was claimed or last renewed.
    private var leasedAt: [EntryID: Duration] = [:]
    /// How many held entries have each time of `leasedAt`: a claim or a renewal gives all its
    /// entries one, so there are few, and the earliest is found without a walk of every held
    /// entry at every event (at concurrency 64, up to 192 of them).
    private var leaseTimes: [Duration: Int] = [:]
    private var chores: ClaimChores
    private var lastReclaim: Duration = .zero
    /// Of the entries held, those claimed as their origin's probe (``ClaimResult/probes``).
    private(set) var probes: Set<EntryID> = []
    /// Answers in a row from each origin that said its server is unwell, as this drain met
    /// them since its last delivery there (none kept for an origin that answers). At each such
    /// answer the drain does not wait for a commit to hear whether the circuit opened: what it
    /// holds of the origin goes back unsent, and the failure is recorded at once.
    private var unwellStreak: [Substring: Int] = [:]
    /// Record what waits at once, without waiting for a batch or the flush delay.
    private var flushNow = false
    /// The origin of each send under way, and the sends under way by origin: for
    /// ``Settings/sendsPerOrigin``, and for an origin whose last answer said its server is
    /// unwell, which gets one send at a time until a delivery.
    private var sendingTo: [EntryID: Substring] = [:]
    private var sendsByOrigin: [Substring: Int] = [:]
    /// ``Settings/sendsPerOrigin``'s answer for each origin met (`Int.max`: none).
    private var originCaps: [Substring: Int] = [:]
    /// When the last claim passed over entries of origins held by a limit that frees soon:
    /// the next claim waits for this point, and the drain does not end before it.
    private var heldUntil: Duration?

    init(settings: Settings, online: Bool) {
        self.settings = settings
        self.online = online
        // The first claim carries rows over from another boot and takes back the entries of
        // drainers that are gone.
        chores = ClaimChores(carryOver: true, reclaimOrphans: true, maxDelay: settings.maxDelay, flow: settings.flow)
    }

    /// The failure the drain ends with, if any.
    var failure: QueueError? {
        if case .failed(let error, _) = phase { return error }
        return nil
    }

    /// What may still be recorded.
    var recording: Recording {
        if case .failed(_, let recording) = phase { return recording }
        return .all
    }

    var isStopping: Bool {
        switch phase {
        case .claiming, .drained: !online
        case .stopped, .failed: true
        }
    }

    /// While claims may be made: whether the last one found fewer entries than it asked for.
    private var claimsExhausted: Bool? {
        switch phase {
        case .claiming(let exhausted), .drained(let exhausted): exhausted
        case .stopped, .failed: nil
        }
    }

    private var isDrained: Bool {
        if case .drained = phase { return true }
        return false
    }

    private var isIdle: Bool { running == 0 && ready.isEmpty }

    // MARK: - Events

    /// Stop claiming (``DrainControl/stop()``, or the drain's task was cancelled).
    mutating func stop() {
        if !isFinal { phase = .stopped(.requested) }
    }

    /// The monitor's status changed.
    mutating func network(online: Bool) { self.online = online }

    /// A send ended; `settlement` is the lifecycle's transition for it.
    mutating func finished(_ settlement: Settlement, networkGone gone: Bool, at now: Duration) {
        running -= 1
        setLease(of: settlement.id, to: nil)
        if !probes.isEmpty { probes.remove(settlement.id) }
        if let origin = sendingTo.removeValue(forKey: settlement.id) {
            if let sends = sendsByOrigin[origin], sends > 1 { sendsByOrigin[origin] = sends - 1 } else { sendsByOrigin[origin] = nil }
        }
        unsettled.append(settlement)
        if oldestUnsettled == nil { oldestUnsettled = now }
        switch settlement.flowSignal {
        case .pause?:
            // The origin's server said when to come back: what is in hand for it goes back unsent.
            if let origin = settlement.url.flatMap(FlowOrigin.key(ofURL:)) { giveBack(origins: [origin], at: now) }
        case .unwell?, .overload(503)?:
            guard let origin = settlement.url.flatMap(FlowOrigin.key(ofURL:)) else { break }
            unwellStreak[origin, default: 0] += 1
            // What is in hand for the origin goes back unsent, and the answer is recorded at
            // once: the next of its entries goes only from a claim, which passes them over once
            // the circuit is open, whichever drainer of the fleet opened it. (Sending on from
            // the hand until this drain's own streak reached the threshold let each drainer of
            // a fleet send that many more after another had opened the circuit.)
            if settings.flow.openAfter > 0 {
                giveBack(origins: [origin], at: now)
                flushNow = true
            }
        case .success?:
            if !unwellStreak.isEmpty, let origin = settlement.url.flatMap(FlowOrigin.key(ofURL:)) { unwellStreak[origin] = nil }
        case .overload?, nil:
            break
        }
        if gone {
            summary.offline = true
            if !isFinal { phase = .stopped(.networkGone) }
        }
    }

    /// Whether the phase is one no later event replaces but a failure: stopped or failed.
    private var isFinal: Bool {
        switch phase {
        case .claiming, .drained: false
        case .stopped, .failed: true
        }
    }

    /// The commit last asked for is done.
    mutating func committed(_ result: ClaimResult, at now: Duration) {
        guard let commit = committing else { return }
        committing = nil
        for settlement in commit.settlements {
            if result.lost.contains(settlement.id) { summary.leasesLost += 1 } else { summary.count(settlement.transition) }
        }
        summary.reclaimed += result.reclaimed
        guard commit.claimLimit > 0 else { return }
        if commit.chores.reclaimOrphans { lastReclaim = now }
        chores.carryOver = false
        chores.reclaimOrphans = false
        ready.append(contentsOf: result.claimed)
        for entry in result.claimed { setLease(of: entry.id, to: now) }
        probes.formUnion(result.probes)
        // An answer paused these origins, or opened their circuit: what is in hand for them
        // goes back unsent.
        if !result.pausedOrigins.isEmpty || !result.opened.isEmpty {
            giveBack(origins: Set((result.pausedOrigins + result.opened).map { $0[...] }), at: now)
        }
        // A drain stopped or failed meanwhile stays so; a drained one stays drained.
        let exhausted = result.claimed.count < commit.claimLimit
        // The service waits for the sooner of a held origin and an open circuit's next probe; the
        // drain itself waits only for the first, when it is short.
        summary.heldFor = exhausted ? [result.heldFor, result.probeIn].compactMap { $0 }.min() : nil
        // Entries held by a limit that frees soon: claimed when it does, the drain going on.
        if exhausted, let held = result.heldFor, held <= settings.longestHold {
            heldUntil = now + held
            if case .drained = phase { phase = .claiming(exhausted: true) }
            if case .claiming = phase { phase = .claiming(exhausted: true) }
            return
        }
        heldUntil = nil
        switch phase {
        case .claiming: phase = exhausted && isIdle ? .drained(exhausted: true) : .claiming(exhausted: exhausted)
        case .drained: phase = .drained(exhausted: exhausted)
        case .stopped, .failed: break
        }
    }

    /// Gives back, unsent, the claimed entries in hand whose origin is one of `origins`.
    private mutating func giveBack(origins: Set<Substring>, at now: Duration) {
        guard !ready.isEmpty else { return }
        let given = ready.removeAll { entry in
            // An origin's probe goes: it is the one request its open circuit lets through.
            !probes.contains(entry.id) && (FlowOrigin.key(ofURL: entry.url).map(origins.contains) ?? false)
        }
        for entry in given {
            unsettled.append(Settlement(id: entry.id, transition: .release))
            setLease(of: entry.id, to: nil)
            if oldestUnsettled == nil { oldestUnsettled = now }
        }
    }

    /// These leases were renewed.
    mutating func renewed(_ ids: [EntryID], at now: Duration) {
        for id in ids where leasedAt[id] != nil { setLease(of: id, to: now) }
    }

    /// Records `id`'s lease time (`nil`: no longer held), and counts it among the times held.
    private mutating func setLease(of id: EntryID, to time: Duration?) {
        let old = time.map { leasedAt.updateValue($0, forKey: id) } ?? leasedAt.removeValue(forKey: id)
        if let old {
            if let left = leaseTimes[old], left > 1 { leaseTimes[old] = left - 1 } else { leaseTimes[old] = nil }
        }
        if let time { leaseTimes[time, default: 0] += 1 }
    }

    /// The commit last asked for failed: the drain stops claiming. On a full disk, what that
    /// commit carried is recorded again with the space kept for it, unless it was already
    /// that recording; otherwise it is not recorded (the leases lapse, or the next drain takes
    /// the entries back).
    mutating func commitFailed(_ error: QueueError) {
        guard let commit = committing else { return }
        committing = nil
        if commit.onFullDisk {
            phase = .failed(failure ?? error, recording: .nothing)
            return
        }
        storageFailed(error)
        if recording == .onFullDisk { unsettled = commit.settlements + unsettled }
    }

    /// A claimed entry could not be opened: the drain stops claiming and throws `error` once
    /// what it holds is recorded (the entry itself given back unsent).
    mutating func entryFailed(_ error: QueueError) {
        if case .failed = phase { return }
        phase = .failed(error, recording: .all)
    }

    /// A renewal failed: the drain stops claiming, as for a failed commit; a commit under way
    /// still ends as it ends.
    mutating func renewalFailed(_ error: QueueError) {
        storageFailed(error)
    }

    /// The first failure is the one thrown; each storage failure narrows what may be recorded:
    /// a full disk to what was sent, any other failure to nothing.
    private mutating func storageFailed(_ error: QueueError) {
        let narrowed: Recording = switch recording {
        case .nothing: .nothing
        case .all, .onFullDisk: error.kind == .diskFull ? .onFullDisk : .nothing
        }
        phase = .failed(failure ?? error, recording: narrowed)
    }

    /// `settlements` with the outcomes of sends before the entries given back: should the space
    /// run out, an entry given back unsent is never sent twice, recorded or not.
    private static func sentFirst(_ settlements: [Settlement]) -> [Settlement] {
        settlements.filter { $0.transition != .release } + settlements.filter { $0.transition == .release }
    }

    // MARK: - The decision

    /// What to do now.
    mutating func next(at now: Duration) -> Action {
        if !online { summary.offline = true }
        let stopping = isStopping
        if stopping && !ready.isEmpty {
            // Claimed but never sent: give them back.
            for entry in ready.removeAll(where: { _ in true }) {
                unsettled.append(Settlement(id: entry.id, transition: .release))
                setLease(of: entry.id, to: nil)
                probes.remove(entry.id)
            }
            if oldestUnsettled == nil { oldestUnsettled = now }
        }
        if !stopping, running < settings.limit, !ready.isEmpty {
            // Every send is counted by its origin, capped or not: after an unwell answer the
            // origin gets one at a time, counting those already under way. Moved out, so the walk
            // may change them while `ready` changes (and no copy is made).
            var sends = sendsByOrigin, origins = sendingTo, caps = originCaps
            (sendsByOrigin, sendingTo, originCaps) = ([:], [:], [:])
            let streaks = unwellStreak, perOrigin = settings.sendsPerOrigin
            let batch = ready.take(settings.limit - running) { entry in
                guard let origin = FlowOrigin.key(ofURL: entry.url) else { return true }
                var cap = caps[origin] ?? {
                    let cap = perOrigin?(origin) ?? .max
                    caps[origin] = cap
                    return cap
                }()
                // After an answer that said the server is unwell: one at a time, until one is delivered.
                if !streaks.isEmpty, streaks[origin, default: 0] > 0 { cap = 1 }
                guard sends[origin, default: 0] < cap else { return false }
                sends[origin, default: 0] += 1
                origins[entry.id] = origin
                return true
            }
            (sendsByOrigin, sendingTo, originCaps) = (sends, origins, caps)
            if !batch.isEmpty {
                running += batch.count
                return .start(batch)
            }
        }
        let recordable = recording != .nothing
        if isIdle && committing == nil && (unsettled.isEmpty || !recordable) && (stopping || isDrained) { return .finish }

        // One commit at a time; sends go on starting and finishing while it runs.
        var claimLimit = 0
        let level = settings.limit + settings.reserve
        if let exhausted = claimsExhausted, committing == nil, online, running + ready.count <= level, !exhausted || isIdle,
           heldUntil.map({ now >= $0 }) ?? true {
            claimLimit = level + settings.claimBatch - running - ready.count
        }
        // Held by a limit's next token: what is left to record goes with that claim, in one
        // commit, unless a batch is full or the drain stops.
        let waitingForToken = heldUntil.map { now < $0 } ?? false
        let flushDue = committing == nil && recordable && !unsettled.isEmpty && (
            unsettled.count >= settings.claimBatch || stopping || flushNow || (!waitingForToken && (isIdle
                || oldestUnsettled.map { now - $0 >= settings.flushDelay } ?? false))
        )
        if claimLimit > 0 || flushDue {
            if claimLimit > 0 && now - lastReclaim >= settings.reclaimInterval { chores.reclaimOrphans = true }
            let onFullDisk = recording == .onFullDisk
            let commit = Commit(
                settlements: onFullDisk ? Self.sentFirst(unsettled) : unsettled,
                claimLimit: claimLimit,
                chores: claimLimit > 0 ? chores : ClaimChores(maxDelay: settings.maxDelay, flow: settings.flow),
                onFullDisk: onFullDisk
            )
            committing = commit
            unsettled.removeAll(keepingCapacity: true)
            oldestUnsettled = nil
            flushNow = false
            return .commit(commit)
        }

        var deadline: Duration?
        // While a commit runs, its end is the next event: no timer for the flush.
        if failure == nil, committing == nil, !waitingForToken, let oldest = oldestUnsettled { deadline = oldest + settings.flushDelay }
        if !stopping, committing == nil, let heldUntil, now < heldUntil { deadline = min(deadline ?? heldUntil, heldUntil) }
        if failure == nil, let renewal = settings.renewal, let earliest = leaseTimes.keys.min() {
            let renewAt = earliest + renewal
            if now >= renewAt {
                let due = leasedAt.filter { now - $0.value >= renewal }.map(\.key).sorted()
                return .renew(due)
            }
            deadline = min(deadline ?? renewAt, renewAt)
        }
        return .wait(until: deadline)
    }
}
