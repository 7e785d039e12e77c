import HTTPCore

/// When a ``QueueService`` drains, applies retention and waits, as a pure machine: readings of
/// the queue's clock in, one step out. No I/O and no clock of its own: the service performs
/// each step on its queue's clock and reports what came of it, so these rules are tested
/// without a store, and the service runs on ``ManualQueueClock`` in tests.
///
/// The rules it keeps:
/// - Retention runs when the service starts, and then between drains once `retentionInterval`
///   has passed on the boot clock (a new boot counts as passed): at most once per drain.
/// - After a drain, the next follows at once when something is due, unless the drain did
///   nothing: then not sooner than `idleFloor`, so that an entry due but not claimable (in
///   flight elsewhere, paused) does not spin the loop. An entry that came due only after the
///   drain began is not of those (its claims may all have come before it was due): the next
///   drain follows at once, and the floor holds from that one on.
/// - Otherwise the service waits for a wake-up (an enqueue, the network back, a stop) until
///   the next due time or the poll, whichever comes first; a wake-up ends the wait in a drain.
struct ServiceSchedule {
    enum Step: Equatable {
        /// Drain (when online), then report ``drained(didWork:nextDue:)``.
        case drain
        /// Apply retention, then report ``retentionApplied(at:)``.
        case applyRetention
        /// Wait for a wake-up, at the latest until the boot clock reads `untilUptime`; then
        /// report ``woke()``.
        case wait(untilUptime: Double)
    }

    private enum Phase {
        /// Retention first.
        case starting
        /// A drain next.
        case draining
        /// A drain ended: whether it did work, when something is next due, and when it began.
        case drained(didWork: Bool, nextDue: DueTime?, began: QueueTime?)
    }

    let pollInterval: Duration
    let retentionInterval: Duration
    let idleFloor: Duration
    private var phase = Phase.starting
    private var lastRetention: QueueTime?

    init(pollInterval: Duration, retentionInterval: Duration, idleFloor: Duration = .milliseconds(100)) {
        self.pollInterval = pollInterval
        self.retentionInterval = retentionInterval
        self.idleFloor = idleFloor
    }

    // MARK: - Events

    /// A drain that began at `began` ended, or was skipped while offline (no work, nothing due).
    mutating func drained(didWork: Bool, nextDue: DueTime?, began: QueueTime? = nil) {
        phase = .drained(didWork: didWork, nextDue: nextDue, began: began)
    }

    /// Retention ran, or failed (then it is tried again after the interval).
    mutating func retentionApplied(at now: QueueTime) {
        lastRetention = now
        if case .starting = phase { phase = .draining }
    }

    /// A wait ended, by a wake-up or its time.
    mutating func woke() {
        phase = .draining
    }

    // MARK: - The decision

    /// What to do at `now`.
    func next(at now: QueueTime) -> Step {
        switch phase {
        case .starting:
            return .applyRetention
        case .draining:
            return .drain
        case .drained(let didWork, let nextDue, let began):
            if retentionDue(at: now) { return .applyRetention }
            var until = now.uptime + pollInterval.seconds
            if let nextDue {
                // Due after the drain began: not yet due, maybe, when its claims looked.
                let cameDueSince = began.map { nextDue.boot == $0.boot && nextDue.uptime > $0.uptime } ?? false
                let remaining = nextDue.remaining(at: now)
                let wait = max(remaining, didWork || cameDueSince ? .zero : idleFloor)
                if wait == .zero { return .drain }
                // Until the due time itself, not now plus what remains: `remaining` is rounded
                // up to a millisecond, so the sum could end up to 1 ms past it (an injected clock
                // moved exactly to the due time never got there).
                until = min(until, wait == remaining ? nextDue.uptime : now.uptime + wait.seconds)
            }
            return .wait(untilUptime: until)
        }
    }

    private func retentionDue(at now: QueueTime) -> Bool {
        guard let lastRetention, lastRetention.boot == now.boot else { return true }
        return now.uptime - lastRetention.uptime >= retentionInterval.seconds
    }
}
