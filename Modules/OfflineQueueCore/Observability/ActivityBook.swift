import Foundation
import HTTPCore

/// What this process counted for the activity kept per minute (``ActivityMinute``) and has not
/// yet added to the store: the drains' settlements, and the backlog whenever the counts are
/// read. It is added to the store at most every ``flushInterval`` (by the drain that counts,
/// after a commit or as it ends, and before the activity is read) and when the queue closes,
/// so the store sees one small write per interval per drainer, never one per entry or per
/// drain.
///
/// Sendable: the state is behind a lock. A write that fails keeps its counts for the next.
final class ActivityBook: Sendable {
    /// How often a drain adds what it counted to the store.
    static let flushInterval = Duration.seconds(10)
    /// How long the store keeps a minute: twice the hour the console draws.
    static let kept = Duration.seconds(2 * 3_600)

    private struct State {
        var minutes: [Int64: ActivityMinute] = [:]
        /// When the last write began, on the boot clock.
        var flushedAt: Double
    }

    private let state: LockedBox<State>
    private let store: any QueueUpkeepStorage
    private let clock: QueueClock

    init(store: any QueueUpkeepStorage, clock: QueueClock) {
        self.store = store
        self.clock = clock
        state = LockedBox(State(flushedAt: clock.now().uptime))
    }

    /// Counts what a commit recorded: deliveries, and attempts that failed (to be retried,
    /// dead, or left for an operator). Entries whose lease was lost are not this drain's.
    func count(_ settlements: [Settlement], lost: Set<EntryID>) {
        var delivered = 0
        var failed = 0
        for settlement in settlements where !lost.contains(settlement.id) {
            switch settlement.transition {
            case .deliver: delivered += 1
            case .retry(let retry) where !retry.waitingForNetwork: failed += 1
            case .deadLetter, .conflict, .drop: failed += 1
            case .retry, .release: break
            }
        }
        guard delivered + failed > 0 else { return }
        let minute = ActivityMinute.number(of: clock.now().wall)
        state.withLock { state in
            state.minutes[minute, default: ActivityMinute(minute: ActivityMinute.start(of: minute))].add(
                ActivityMinute(minute: ActivityMinute.start(of: minute), delivered: delivered, failed: failed)
            )
        }
    }

    /// The backlog as the counts just read say, for the minute it is now.
    func sample(_ counts: QueueCounts) {
        let minute = ActivityMinute.number(of: clock.now().wall)
        state.withLock { state in
            state.minutes[minute, default: ActivityMinute(minute: ActivityMinute.start(of: minute))].add(
                ActivityMinute(minute: ActivityMinute.start(of: minute), pending: counts.pending, due: counts.due)
            )
        }
    }

    /// Whether a write is due (something waits, and the last write began an interval ago or
    /// more); if so the interval starts again now, so of two callers asking at once, one is
    /// told to write.
    func takeTurn() -> Bool {
        let now = clock.now().uptime
        return state.withLock { state in
            guard !state.minutes.isEmpty, now - state.flushedAt >= Self.flushInterval.seconds else { return false }
            state.flushedAt = now
            return true
        }
    }

    /// Adds what waits to the store (nothing when nothing waits). On failure the counts are
    /// kept, merged with those counted meanwhile, for the next write.
    func flush() async throws(QueueError) {
        let now = clock.now()
        let taken = state.withLock { state -> [ActivityMinute] in
            state.flushedAt = now.uptime
            defer { state.minutes.removeAll(keepingCapacity: true) }
            return state.minutes.values.sorted { $0.minute < $1.minute }
        }
        guard !taken.isEmpty else { return }
        let keepingSince = now.wall.addingTimeInterval(-Self.kept.seconds)
        do throws(QueueError) {
            try await store.recordActivity(taken, keepingSince: keepingSince)
        } catch {
            let oldest = ActivityMinute.number(of: keepingSince)
            state.withLock { state in
                for minute in taken where minute.number >= oldest {
                    // Counted meanwhile is newer: its backlog wins, its counts add up.
                    var merged = minute
                    if let newer = state.minutes[minute.number] { merged.add(newer) }
                    state.minutes[minute.number] = merged
                }
            }
            throw error
        }
    }
}
