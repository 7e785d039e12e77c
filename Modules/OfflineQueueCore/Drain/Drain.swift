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

    /// A control not yet stopped, to pass to `OfflineQueue.drain(_:concurrency:control:)`.
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
    /// The policy lives in `DrainMachine`, and the drain's role (`QueueDrainer`) drives it;
    /// this checks the keys first and reads what is left afterwards.
    public func drain(_ mode: DrainMode = .untilIdle, concurrency: Int? = nil, control: DrainControl? = nil) async throws(QueueError) -> DrainSummary {
        try await configuration.tracing.traced { () async -> Result<DrainSummary, QueueError> in
            do throws(QueueError) {
                return .success(try await drainEntries(mode, concurrency: concurrency, control: control))
            } catch {
                return .failure(error)
            }
        }.get()
    }

    /// ``drain(_:concurrency:control:)`` inside the drain's span, when there is one: the drain's
    /// role sends, then what is left is read as an operator reads it.
    private func drainEntries(_ mode: DrainMode, concurrency: Int?, control: DrainControl?) async throws(QueueError) -> DrainSummary {
        // The keys every stored entry needs, checked before any entry is claimed.
        let sealing = try await sealGate.sealing(configuration.sealing, store: sealStore, forDrain: true)
        // The fleet's limits, as this drainer was given them: stored for every drainer by the
        // drain's preparation, until a drain of this queue ran (a store that holds them
        // already changes nothing, wakes no one).
        let limits = configuration.flow.limits.isEmpty || flowLimitsStored.current ? nil : configuration.flow.limits
        let conflicts = configuration.conflictResolver.map { resolver in
            QueueDrainer.ConflictHandling(resolver: resolver) { request, entry throws(QueueError) in
                try await self.prepareReplacement(request, for: entry)
            }
        }
        var summary = try await drainer.run(
            mode, concurrency: concurrency, control: control ?? DrainControl(), sealing: sealing, conflicts: conflicts, originLimits: limits
        )
        if limits != nil { flowLimitsStored.withLock { $0 = true } }
        let counts = try await operations.counts()
        operations.countsCache.offer(counts)
        metrics.update(counts, now: configuration.clock.now().wall)
        summary.remaining = counts.pending
        summary.blocked = counts.blocked
        summary.stuck = counts.stuck
        if counts.pending > 0 { summary.paused = try await operations.pauses().pendingHeld }
        summary.nextAttemptAt = counts.nextAttemptAt
        summary.nextDue = counts.nextDue
        // Due entries its last claim passed over for their origin's flow: due when that frees
        // (an entry of another origin that comes due sooner wakes the service as ever).
        if let held = summary.heldFor {
            let now = configuration.clock.now()
            if counts.nextDue.map({ $0.remaining(at: now) == .zero }) ?? true {
                summary.nextDue = DueTime(boot: now.boot, uptime: now.uptime + held.seconds)
                summary.nextAttemptAt = now.wall.addingTimeInterval(held.seconds)
            }
        }
        summary.inflightElsewhere = counts.inflight - counts.inflightOrphaned
        summary.otherDrainers = counts.drainers.filter { $0 != owner }
        return summary
    }
}
