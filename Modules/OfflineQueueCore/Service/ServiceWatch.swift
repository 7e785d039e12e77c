import HTTPCore

/// What a queue's drains and services are doing right now, on the boot clock of the queue's
/// clock (``QueueConfiguration/clock``): the sends and store calls under way with when each
/// began, and when anything last moved. A watchdog asks it
/// whether the service is alive (``QueueService/liveness()``): a loop that turns is not enough
/// when a send hangs on a server that never answers, or a store call never returns.
///
/// Sendable: the state is behind a lock; each record is a few words, kept only while its
/// operation runs.
final class ServiceWatch: Sendable {
    /// A store call under way: which one, for the message that names it.
    enum StoreCall: String, Sendable {
        case claim = "settle and claim"
        case settle
        case renewLeases = "lease renewal"
        case preparation = "preparing a drain"
        case counts
        case retention
        case sweep = "sweeping orphan bodies"
    }

    private struct Send {
        var entry: EntryID
        var started: Double
        /// When it is overdue: its timeout and a margin after it began.
        var limit: Double
    }

    private struct State {
        var sends: [EntryID: Send] = [:]
        var calls: [UInt64: (call: StoreCall, started: Double)] = [:]
        var nextCall: UInt64 = 0
        var lastProgress: Double
    }

    /// Where the watch reads the boot clock: the queue's clock.
    private let clock: QueueClock
    private let state: LockedBox<State>

    /// A watch that reads the boot clock through `clock`; nothing has moved yet, so it counts
    /// from now.
    init(clock: QueueClock) {
        self.clock = clock
        state = LockedBox(State(lastProgress: clock.now().uptime))
    }

    /// The boot clock's reading now.
    private var uptime: Double { clock.now().uptime }

    /// How long past its timeout a send may run before a watchdog calls it stuck: time for the
    /// transport to notice its own deadline and for plugins around the exchange.
    static let sendMargin = Duration.seconds(5)

    /// A send of `entry` begins; it may take `timeout` and `margin` more before it is overdue.
    func sendBegan(_ entry: EntryID, timeout: Duration, margin: Duration) {
        let now = uptime
        state.withLock { state in
            state.sends[entry] = Send(entry: entry, started: now, limit: now + (timeout + margin).seconds)
            state.lastProgress = now
        }
    }

    func sendEnded(_ entry: EntryID) {
        let now = uptime
        state.withLock { state in
            state.sends.removeValue(forKey: entry)
            state.lastProgress = now
        }
    }

    /// Runs one store call, recorded while it runs.
    func storeCall<T>(_ call: StoreCall, _ body: () async throws(QueueError) -> T) async throws(QueueError) -> T {
        let id = storeCallBegan(call)
        defer { storeCallEnded(id) }
        return try await body()
    }

    /// A store call begins; returns its number for ``storeCallEnded(_:)``.
    func storeCallBegan(_ call: StoreCall) -> UInt64 {
        let now = uptime
        return state.withLock { state -> UInt64 in
            state.nextCall &+= 1
            state.calls[state.nextCall] = (call, now)
            return state.nextCall
        }
    }

    func storeCallEnded(_ id: UInt64) {
        let now = uptime
        state.withLock { state in
            state.calls.removeValue(forKey: id)
            state.lastProgress = now
        }
    }

    /// A loop went round, or a drain moved: the service is not wedged.
    func progressed() {
        let now = uptime
        state.withLock { $0.lastProgress = now }
    }

    /// The verdict at `now`: stuck when a send is past its limit, when a store call has run
    /// longer than `storeCallLimit`, or when nothing is under way and nothing has moved for
    /// `idleLimit` (a loop that should have gone round by then).
    func liveness(at now: Double, storeCallLimit: Duration, idleLimit: Duration) -> ServiceLiveness {
        state.withLock { state in
            if let late = state.sends.values.filter({ $0.limit < now }).min(by: { $0.started < $1.started }) {
                let limit = Self.seconds(late.limit - late.started)
                return .stuck("the send of entry \(late.entry) has been in flight for \(Self.seconds(now - late.started)) (limit \(limit))")
            }
            if let oldest = state.calls.values.min(by: { $0.started < $1.started }), now - oldest.started > storeCallLimit.seconds {
                return .stuck("a store call (\(oldest.call.rawValue)) has not returned for \(Self.seconds(now - oldest.started)) (limit \(Self.seconds(storeCallLimit.seconds)))")
            }
            if state.sends.isEmpty, state.calls.isEmpty, now - state.lastProgress > idleLimit.seconds {
                return .stuck("the service loop has not gone round for \(Self.seconds(now - state.lastProgress)) (limit \(Self.seconds(idleLimit.seconds)))")
            }
            return .alive
        }
    }

    private static func seconds(_ value: Double) -> String {
        value < 10 ? "\((value * 10).rounded() / 10) s" : "\(Int(value.rounded())) s"
    }
}

/// Whether a ``QueueService`` is demonstrably alive, as a watchdog asks: its loop turns, every
/// send in flight is younger than its timeout and a margin, and every store call returns within
/// its bound.
///
/// ```swift
/// let verdict = service.liveness()
/// if verdict.isAlive { notifier.notify("WATCHDOG=1") } else { logger.warning("\(verdict)") }
/// ```
public struct ServiceLiveness: Sendable, Hashable, CustomStringConvertible {
    /// Whether the service is alive.
    public let isAlive: Bool
    /// What is stuck, when it is not.
    public let reason: String?

    static let alive = ServiceLiveness(isAlive: true, reason: nil)

    static func stuck(_ reason: String) -> ServiceLiveness {
        ServiceLiveness(isAlive: false, reason: reason)
    }

    public var description: String { reason.map { "stuck: " + $0 } ?? "alive" }
}
