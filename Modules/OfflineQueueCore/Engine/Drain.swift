import Foundation
import HTTPCore
import HTTPTypes
import Reachability

/// How long a drain goes on.
public enum DrainMode: Sendable, Hashable {
    /// Until nothing is due: entries that fail and come due again during the drain are sent
    /// again. Entries backing off past that point stay pending.
    case untilIdle
    /// Each entry due when the drain starts is tried at most once.
    case once
}

/// Lets a caller stop a drain gracefully: no new claims, in-flight sends run to their end.
public final class DrainControl: Sendable {
    private let stopped = LockedBox(false)
    let wake = WakeSignal()

    public init() {}

    /// Stops claiming new entries; sends under way finish (cancel the drain's task to cut
    /// them short: their leases are then given back).
    public func stop() {
        stopped.withLock { $0 = true }
        wake.fire()
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopped.current }

    /// Returns once ``stop()`` was called, or when the task is cancelled.
    func stopRequested() async {
        while !Task.isCancelled {
            let mark = wake.mark
            if isStopped { return }
            await wake.wait(after: mark)
        }
    }
}

extension OfflineQueue {
    /// Sends due entries, up to ``QueueConfiguration/concurrency`` at once and one per group,
    /// until nothing is due (or once each, with `.once`), and returns what happened.
    ///
    /// Does nothing when the monitor says the network is gone, and stops claiming when a send
    /// finds it gone. When the network is there (or there is no monitor), entries that waited
    /// for it are due at once. Cancelling the calling task interrupts sends in flight and gives their
    /// entries back (pending, nothing counted).
    ///
    /// The policy lives in ``DrainMachine``; this is its driver: a task group whose children
    /// (the sends, the store's commits, a stop watcher, a network watcher, a timer when the
    /// machine asks for one) return events, and the machine's actions performed in turn.
    public func drain(_ mode: DrainMode = .untilIdle, concurrency: Int? = nil, control: DrainControl? = nil) async throws(QueueError) -> DrainSummary {
        try await traced { () async -> Result<DrainSummary, QueueError> in
            do throws(QueueError) {
                return .success(try await drainEntries(mode, concurrency: concurrency, control: control))
            } catch {
                return .failure(error)
            }
        }.get()
    }

    /// ``drain(_:concurrency:control:)`` inside the drain's span, when there is one.
    private func drainEntries(_ mode: DrainMode, concurrency: Int?, control: DrainControl?) async throws(QueueError) -> DrainSummary {
        let control = control ?? DrainControl()
        let clock = configuration.clock
        let started = clock.now()
        // The machine's time: seconds on the queue's boot clock since the drain began.
        let elapsed = { Duration.clamped(seconds: clock.now().uptime - started.uptime) ?? .zero }
        // The keys every stored entry needs, checked before any entry is claimed.
        let sealing = try await sealGate.sealing(of: self, forDrain: true)
        try await activity.storeCall(.ownership) { () async throws(QueueError) in try await drainStore.acquireOwnership() }
        // Nothing is sent unless what it gives can be recorded, even once the disk is full.
        try await activity.storeCall(.reserve) { () async throws(QueueError) in try await drainStore.holdReserve() }
        let online = monitor?.status.isOnline ?? true
        // The network is there now: entries that found it gone are due again.
        if online { _ = try await activity.storeCall(.wakeWaiters) { () async throws(QueueError) in try await drainStore.wakeNetworkWaiters(now: started) } }
        let policy = configuration.policy
        let limit = max(1, concurrency ?? configuration.concurrency)
        // Commits of twice the concurrency, claimed while a round of claimed entries is still
        // in hand: part of a commit's cost is per commit, not per entry. Not larger: the entries
        // claimed ahead are what a newer entry of higher priority waits behind
        // (`courier-bench --queue-priority` measures how long).
        var machine = DrainMachine(settings: DrainMachine.Settings(
            limit: limit, batch: 2 * limit, reserve: limit,
            renewal: policy.renewsLeases ? policy.leaseDuration / 2 : nil, maxDelay: policy.longestDelay
        ), online: online)
        await withTaskGroup(of: DrainEvent.self) { group in
            group.addTask { await control.stopRequested(); return .stop }
            if let monitor { group.addTask { await Self.change(of: monitor, from: online) } }
            var timers: [Duration] = []   // the deadlines of the timers running
            // What the metrics need of each entry sent, until its result is recorded.
            var sending: [EntryID: (name: String, createdAt: Date)] = [:]
            let recording = metrics.isRecording
            while true {
                if Task.isCancelled { machine.stop() }
                switch machine.next(at: elapsed()) {
                case .start(let entries):
                    for entry in entries {
                        if recording { sending[entry.id] = (entry.name, entry.createdAt) }
                        if broadcast.hasSubscribers { broadcast.publish(.attemptStarted(id: entry.id, attempt: entry.attempts + 1)) }
                        // Sealed entries open here, one after another (see `openAhead`).
                        let ahead = sealing.openAhead(entry)
                        group.addTask { DrainEvent.finished(await self.attemptAndSettle(entry, sealing: sealing, ahead: ahead)) }
                    }
                case .commit(let commit):
                    // A child task: sends keep starting and finishing while the store works.
                    let attemptedSince = mode == .once ? started.uptime : nil
                    group.addTask {
                        do throws(QueueError) {
                            let result = try await self.perform(commit, now: clock.now(), attemptedSince: attemptedSince)
                            return .committed(commit.settlements, .success(result))
                        } catch { return .committed(commit.settlements, .failure(error)) }
                    }
                case .renew(let ids):
                    do throws(QueueError) {
                        try await activity.storeCall(.renewLeases) { () async throws(QueueError) in
                            try await drainStore.renewLeases(ids, now: clock.now(), lease: policy.leaseDuration)
                        }
                        machine.renewed(ids, at: elapsed())
                    } catch { machine.renewalFailed(error) }
                case .wait(let deadline):
                    // A timer due at or before the deadline wakes the loop in time: no second one.
                    if let deadline, !timers.contains(where: { $0 <= deadline }) {
                        timers.append(deadline)
                        group.addTask {
                            await clock.sleep(started.uptime + deadline.seconds)
                            return .tick(deadline)
                        }
                    }
                    switch await group.next() {
                    case .finished(let result)?:
                        machine.finished(result.settlement, networkGone: result.networkGone, at: elapsed())
                        if let failure = result.failure { machine.entryFailed(failure) }
                    case .committed(let settlements, .success(let result))?:
                        announce(settlements, lost: result.lost)
                        if !sending.isEmpty { record(settlements, lost: result.lost, sending: &sending) }
                        machine.committed(result, at: elapsed())
                    case .committed(_, .failure(let error))?: machine.commitFailed(error)
                    case .stop?: machine.stop()
                    case .network(let online)?:
                        machine.network(online: online)
                        if let monitor { group.addTask { await Self.change(of: monitor, from: online) } }
                    case .tick(let deadline)?: timers.removeAll { $0 == deadline }
                    case .monitorEnded?, nil: break
                    }
                case .finish:
                    group.cancelAll()
                    return
                }
            }
        }
        if let failure = machine.failure { throw failure }
        var summary = machine.summary
        // What is left, read as an operator reads it.
        let counts = try await self.counts()
        operations.countsCache.offer(counts)
        metrics.update(counts, now: clock.now().wall)
        summary.remaining = counts.pending
        if counts.pending > 0 { summary.paused = try await pauses().pendingHeld }
        summary.nextAttemptAt = counts.nextAttemptAt
        summary.nextDue = counts.nextDue
        summary.inflightElsewhere = counts.inflight - counts.inflightOrphaned
        summary.otherDrainers = counts.drainers.filter { $0 != owner }
        return summary
    }

    /// Counts what a commit recorded, for entries of `sending`, which it forgets.
    private func record(_ settlements: [Settlement], lost: Set<EntryID>, sending: inout [EntryID: (name: String, createdAt: Date)]) {
        let now = configuration.clock.now().wall
        for settlement in settlements {
            guard let entry = sending.removeValue(forKey: settlement.id), !lost.contains(settlement.id) else { continue }
            metrics.recorded(settlement.transition, name: entry.name, createdAt: entry.createdAt, now: now)
        }
    }

    /// What the drain's child tasks hand back.
    enum DrainEvent: Sendable {
        case finished(AttemptReport)
        /// A commit the machine asked for ended; its settlements, for the events.
        case committed([Settlement], Result<ClaimResult, QueueError>)
        case stop
        case network(online: Bool)
        case monitorEnded
        /// The timer set for this deadline (since the drain began) went off.
        case tick(Duration)
    }

    /// Waits until `monitor` says online when `online` is false, or offline when it is true.
    private static func change(of monitor: any NetworkMonitor, from online: Bool) async -> DrainEvent {
        for await status in monitor.statusUpdates() where status.isOnline != online {
            return .network(online: status.isOnline)
        }
        return Task.isCancelled ? .stop : .monitorEnded
    }
}
