import HTTPCore

/// The queue's counts as read from the store at most once per `maxAge`, shared by everyone in
/// the process who asks (systemd's `STATUS=`, the metrics gauges, a console's viewers): one
/// count query however many readers, and readers who ask while one is under way wait for it
/// rather than start their own.
///
/// Sendable: the state is behind a lock; the read under way is a task whose result every
/// waiter takes.
final class CountsCache: Sendable {
    private struct State {
        /// The last counts read, and when (boot clock).
        var last: (counts: QueueCounts, at: Double)?
        var reading: Task<Result<QueueCounts, QueueError>, Never>?
    }

    private let state = LockedBox(State())

    private enum Found {
        case cached(QueueCounts)
        case reading(Task<Result<QueueCounts, QueueError>, Never>)
    }

    /// Counts no older than `maxAge`, read by `read` when there are none (`read` runs at most
    /// once at a time). A failed read is not kept: the next caller tries again.
    func counts(maxAge: Duration, read: @escaping @Sendable () async -> Result<QueueCounts, QueueError>) async throws(QueueError) -> QueueCounts {
        let now = BootClock.uptime()
        let found = state.withLock { state -> Found in
            if let last = state.last, now - last.at <= maxAge.seconds { return .cached(last.counts) }
            if let reading = state.reading { return .reading(reading) }
            let shared = self.state
            let reading = Task {
                let result = await read()
                shared.withLock { state in
                    if case .success(let counts) = result { state.last = (counts, BootClock.uptime()) }
                    state.reading = nil
                }
                return result
            }
            state.reading = reading
            return .reading(reading)
        }
        switch found {
        case .cached(let counts): return counts
        case .reading(let reading): return try await reading.value.get()
        }
    }

    /// Counts read elsewhere (at the end of a drain), kept for the next readers.
    func offer(_ counts: QueueCounts) {
        let now = BootClock.uptime()
        state.withLock { $0.last = (counts, now) }
    }
}

extension OfflineQueue {
    /// The counts, no older than `maxAge`: one store query per `maxAge` however many callers in
    /// this process ask (a status line, the gauges, a console), and callers that ask while one
    /// is under way share its answer. ``counts()`` always reads.
    ///
    /// ```swift
    /// let counts = try await queue.recentCounts()      // at most a second old
    /// print("pending \(counts.pending), due \(counts.due)")
    /// ```
    public func recentCounts(maxAge: Duration = .seconds(1)) async throws(QueueError) -> QueueCounts {
        try await countsCache.counts(maxAge: maxAge) { [self] in
            do throws(QueueError) {
                return .success(try await counts())
            } catch {
                return .failure(error)
            }
        }
    }
}
