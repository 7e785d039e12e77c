import Dispatch

/// The deadlines of one transport's exchanges, all on one dispatch timer.
///
/// A `Task` that sleeps until each exchange's deadline costs two trips through the
/// cooperative pool per exchange (start, and the cancelled sleep's end) besides the task
/// itself; here an exchange only takes a lock to be added and to be removed, and the timer
/// wakes only when the earliest deadline it was armed for comes.
///
/// Removal is lazy: an ended exchange leaves the `live` table at once, but its heap entry stays
/// until it reaches the top of the heap (or the heap is compacted when more than half of it is
/// dead), so removing costs no timer change. When the timer fires it fails every live exchange
/// past its deadline with a `timedOut` transport failure, drops the dead entries at the top and
/// re-arms for the earliest remaining one.
final class URLSessionDeadlines: Sendable {
    private struct Entry {
        let deadline: ContinuousClock.Instant
        let id: UInt64
    }

    private struct State {
        /// A binary min-heap by deadline, possibly with entries of exchanges that already ended.
        var heap: [Entry] = []
        /// The exchanges still waiting for their deadline.
        var live: [UInt64: (exchange: URLSessionExchange, deadline: ContinuousClock.Instant)] = [:]
        var nextID: UInt64 = 0
        /// The deadline the timer is armed for, if any.
        var armed: ContinuousClock.Instant?
    }

    private let state = LockedBox(State())
    /// `DispatchSourceTimer` is thread-safe; its event handler runs on its own serial queue.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer

    init() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "courier.URLSessionTransport.deadlines"))
        self.timer = timer
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.activate()
    }

    deinit {
        timer.cancel()
    }

    /// Fails `exchange` with a `timedOut` transport failure at `deadline` unless it is removed
    /// first; the result is the token ``remove(_:)`` takes.
    func add(_ exchange: URLSessionExchange, deadline: ContinuousClock.Instant) -> UInt64 {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.live[id] = (exchange, deadline)
            Self.push(Entry(deadline: deadline, id: id), into: &state.heap)
            if state.heap.count > 64, state.heap.count > 2 * state.live.count {
                // Mostly dead entries: rebuild from the live ones.
                state.heap = state.live.map { Entry(deadline: $0.value.deadline, id: $0.key) }
                state.heap.sort { $0.deadline < $1.deadline }
            }
            if state.armed.map({ deadline < $0 }) ?? true { arm(&state, for: deadline) }
            return id
        }
    }

    /// The exchange of `token` ended: its deadline no longer matters.
    func remove(_ token: UInt64) {
        state.withLock { _ = $0.live.removeValue(forKey: token) }
    }

    private func fire() {
        let now = ContinuousClock.now
        let expired = state.withLock { state -> [URLSessionExchange] in
            var expired: [URLSessionExchange] = []
            while let top = state.heap.first {
                guard let entry = state.live[top.id] else {
                    Self.popMin(from: &state.heap)
                    continue
                }
                guard top.deadline <= now else { break }
                Self.popMin(from: &state.heap)
                state.live[top.id] = nil
                expired.append(entry.exchange)
            }
            state.armed = nil
            if let next = state.heap.first { arm(&state, for: next.deadline) }
            return expired
        }
        for exchange in expired {
            exchange.fail(.transport(TransportFailure(.timedOut, "no complete response within the timeout")))
        }
    }

    /// Arms the timer for `deadline` (under the lock, so two arms never cross).
    private func arm(_ state: inout State, for deadline: ContinuousClock.Instant) {
        state.armed = deadline
        let delay = ContinuousClock.now.duration(to: deadline)
        let nanoseconds = delay <= .zero ? 0 : delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        // Rounded up, so the timer never fires before the deadline on the continuous clock
        // (an early firing would only re-arm, but costs a wake-up).
        timer.schedule(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds) + 1_000), leeway: .nanoseconds(0))
    }

    private static func push(_ entry: Entry, into heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popMin(from heap: inout [Entry]) {
        guard heap.count > 1 else {
            heap.removeAll(keepingCapacity: true)
            return
        }
        heap[0] = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
