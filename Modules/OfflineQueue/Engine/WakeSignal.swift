import HTTPCore

/// A level-triggered wake-up: ``fire()`` wakes the current or the next ``wait(timeout:)``,
/// once (a wait may also return spuriously, so waiters re-check their condition). Used by the drain loop (a send finished) and the service loop (enqueue, network back).
final class WakeSignal: Sendable {
    private struct State {
        var fired = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = LockedBox(State())

    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.fired = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns when fired (at once if fired since the last wait), when `timeout` passes, or
    /// when the task is cancelled.
    func wait(timeout: Duration? = nil) async {
        let timer = timeout.map { timeout in
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.fire()
            }
        }
        defer { timer?.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled {
                        state.fired = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            fire()
        }
    }
}
