import Foundation
import HTTPCore

/// Holds one monitor's current status and fans its changes out to any number of streams.
///
/// Identical consecutive statuses are dropped here, once for every monitor.
final class StatusBroadcast: Sendable {
    private struct State {
        var status: NetworkStatus
        var subscribers: [UUID: AsyncStream<NetworkStatus>.Continuation] = [:]
        var finished = false
    }

    private let state: LockedBox<State>
    /// Held while statuses go out, so every subscriber sees them in the order they were
    /// published; never held by a subscriber's termination, which takes only `state`. A yield
    /// takes the subscriber task's status lock, and a cancelled subscriber holds that lock when
    /// its termination runs: yielding under `state` took the two in opposite orders, which can
    /// block both threads of the cooperative pool for good.
    private let delivery = LockedBox(())

    init(_ initial: NetworkStatus) {
        state = LockedBox(State(status: initial))
    }

    var status: NetworkStatus { state.withLock { $0.status } }

    /// Whether ``finish()`` was called.
    var isFinished: Bool { state.withLock { $0.finished } }

    /// Publishes `status`; returns whether it was a change.
    @discardableResult
    func publish(_ status: NetworkStatus) -> Bool {
        delivery.withLock { _ in
            let subscribers = state.withLock { state -> [AsyncStream<NetworkStatus>.Continuation]? in
                guard !state.finished, state.status != status else { return nil }
                state.status = status
                return Array(state.subscribers.values)
            }
            guard let subscribers else { return false }
            for continuation in subscribers { continuation.yield(status) }
            return true
        }
    }

    func stream() -> AsyncStream<NetworkStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkStatus.self, bufferingPolicy: .unbounded)
        let id = UUID()
        // Under `delivery` too: a status being published reaches the new stream either as its
        // first element or after it, never both.
        delivery.withLock { _ in
            state.withLock { state in
                continuation.yield(state.status)
                if state.finished {
                    continuation.finish()
                } else {
                    state.subscribers[id] = continuation
                }
            }
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every stream; later publishes are ignored.
    func finish() {
        let subscribers = state.withLock { state -> [AsyncStream<NetworkStatus>.Continuation] in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
