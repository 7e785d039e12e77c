import HTTPCore

/// A value read from the store at most once per `maxAge`, shared by everyone in the process
/// who asks (systemd's `STATUS=`, the metrics gauges, a console's viewers): one query however
/// many readers, and readers who ask while one is under way wait for it rather than start
/// their own. A read for another `key` (other parameters) is not shared with it.
///
/// Sendable: the state is behind a lock; the read under way is a task whose result every
/// waiter takes.
final class SharedRead<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        /// The last value read, for which key, and when (boot clock).
        var last: (key: Key, value: Value, at: Double)?
        var reading: (key: Key, generation: Int, task: Task<Result<Value, QueueError>, Never>)?
        /// Raised by ``invalidate()``: a read begun before it is neither kept nor joined.
        var generation = 0
    }

    /// Where the age of what is kept is read: the queue's clock.
    private let clock: QueueClock
    private let state = LockedBox(State())

    /// An empty cache whose values age on `clock`'s boot clock.
    init(clock: QueueClock) { self.clock = clock }

    private enum Found {
        case cached(Value)
        case reading(Task<Result<Value, QueueError>, Never>)
    }

    /// The value of `key` no older than `maxAge`, read by `read` when there is none (`read`
    /// runs at most once at a time). A failed read is not kept: the next caller tries again.
    func value(for key: Key, maxAge: Duration, read: @escaping @Sendable () async -> Result<Value, QueueError>) async throws(QueueError) -> Value {
        let now = clock.now().uptime
        let found = state.withLock { state -> Found in
            // A `maxAge` of zero keeps nothing, even on a clock that has not moved (a manual one).
            if let last = state.last, last.key == key, maxAge > .zero, now - last.at <= maxAge.seconds { return .cached(last.value) }
            if let reading = state.reading, reading.key == key, reading.generation == state.generation { return .reading(reading.task) }
            let shared = self.state
            let clock = self.clock
            let generation = state.generation
            let reading = Task {
                let result = await read()
                let readAt = clock.now().uptime
                shared.withLock { state in
                    guard state.generation == generation else { return }
                    if case .success(let value) = result { state.last = (key, value, readAt) }
                    if state.reading?.key == key { state.reading = nil }
                }
                return result
            }
            state.reading = (key, generation, reading)
            return .reading(reading)
        }
        switch found {
        case .cached(let value): return value
        case .reading(let reading): return try await reading.value.get()
        }
    }

    /// Forgets the value kept and any read under way, after a change this process made (an
    /// operator's pause, retry or purge): the next reader reads again, so the page an action
    /// redirects to shows what it did.
    func invalidate() {
        state.withLock { state in
            state.last = nil
            state.reading = nil
            state.generation += 1
        }
    }

    /// A value read elsewhere (counts at the end of a drain), kept for the next readers.
    func offer(_ value: Value, for key: Key) {
        let now = clock.now().uptime
        state.withLock { $0.last = (key, value, now) }
    }
}

/// The counts' cache: one key, since counts take no parameters.
typealias CountsCache = SharedRead<Int, QueueCounts>

extension SharedRead where Key == Int {
    func counts(maxAge: Duration, read: @escaping @Sendable () async -> Result<Value, QueueError>) async throws(QueueError) -> Value {
        try await value(for: 0, maxAge: maxAge, read: read)
    }

    func offer(_ value: Value) { offer(value, for: 0) }
}

/// The overview's parameters, its cache's key.
struct OverviewShape: Hashable, Sendable {
    var top: Int
    var window: Int
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
        try await operations.recentCounts(maxAge: maxAge)
    }

    /// The overview, no older than `maxAge`, shared as ``recentCounts(maxAge:)`` is: one read
    /// per `maxAge` (the counts, the pauses and the tally by group and name) however many
    /// viewers ask. `overview(top:window:)` always reads.
    public func recentOverview(maxAge: Duration = .seconds(1), top: Int = 50, window: Int = QueueOverview.defaultWindow) async throws(QueueError) -> QueueOverview {
        try await operations.recentOverview(maxAge: maxAge, top: top, window: window)
    }

    /// The overview as the store has it now: the counts (no older than `countsMaxAge`,
    /// ``recentCounts(maxAge:)``), the pauses, the `top` largest groups and names among the
    /// newest `window` entries, the entries waiting for the network and the recent deliveries.
    /// Each part is a bounded read, however many entries there are.
    public func overview(top: Int = 50, window: Int = QueueOverview.defaultWindow, countsMaxAge: Duration = .zero) async throws(QueueError) -> QueueOverview {
        try await operations.overview(top: top, window: window, countsMaxAge: countsMaxAge)
    }
}
