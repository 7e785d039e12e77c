import Dispatch
import HTTPCore

extension Duration {
    /// How long a test waits for a step that must happen before it calls the step hung: a
    /// guard against hangs, never a measure of speed. Beside a busy loop and the whole suite
    /// started at once (hundreds of tests on a 2-core machine's two cooperative threads), a
    /// step that takes milliseconds alone has taken over a minute, so the guard is minutes.
    public static let hangGuard = Duration.seconds(300)
}

/// Runs `body`, which reports its progress through the closure it is handed, and returns
/// whether it ended; it gives up (cancelling `body`, whose task may leak if it ignores the
/// cancellation) only when `limit` passes with no progress at all. A slow machine only slows
/// the steps; a hang stops them for good, so a long run of short rounds is judged round by
/// round, not by a total that the machine's load decides. `step` names what was under way for
/// the failure message: read it with ``ProgressGuard/step``.
///
/// The check runs on a dispatch queue of its own, not on the cooperative pool a hang may hold.
public final class ProgressGuard: Sendable {
    private struct State {
        var progress = 0
        var step: String
        var outcome: CheckedContinuation<Bool, Never>?
        /// When the last step began, and the longest one so far.
        var stepStarted = ContinuousClock.now
        var longest = Duration.zero
        var longestStep = ""
    }

    private let state: LockedBox<State>
    private let limit: Duration
    private let queue = DispatchQueue(label: "courier.test.progress-guard")

    private init(limit: Duration, step: String) {
        self.limit = limit
        state = LockedBox(State(step: step))
    }

    /// What was under way when the guard last heard of progress.
    public var step: String { state.current.step }

    /// The longest time between two reports of progress so far, and the step it was: what a
    /// step costs on this machine under its present load (for the test's output, never judged).
    public var longest: (duration: Duration, step: String) {
        let now = state.current
        return (now.longest, now.longestStep)
    }

    /// Progress: a round or a step done; `step` names the next one.
    public func progressed(_ step: String? = nil) {
        let now = ContinuousClock.now
        state.withLock { state in
            state.progress += 1
            if now - state.stepStarted > state.longest {
                state.longest = now - state.stepStarted
                state.longestStep = state.step
            }
            state.stepStarted = now
            if let step { state.step = step }
        }
    }

    /// Runs `body` under a guard that gives up after `limit` without progress; returns the
    /// guard (its ``step`` says where it stopped) and whether `body` ended.
    public static func run(
        limit: Duration = .hangGuard, starting step: String = "starting", _ body: @escaping @Sendable (ProgressGuard) async -> Void
    ) async -> (ended: Bool, guard: ProgressGuard) {
        let watch = ProgressGuard(limit: limit, step: step)
        let ended = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            watch.state.withLock { $0.outcome = continuation }
            let work = Task {
                await body(watch)
                watch.finish(true)
            }
            watch.check(after: 0) { work.cancel() }
        }
        return (ended, watch)
    }

    private func finish(_ ended: Bool) {
        state.withLock { state in defer { state.outcome = nil }; return state.outcome }?.resume(returning: ended)
    }

    private func check(after progress: Int, onHang: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + limit.seconds) { [self] in
            let now = state.current
            guard now.outcome != nil else { return }
            if now.progress == progress {
                finish(false)
                onHang()
            } else {
                check(after: now.progress, onHang: onHang)
            }
        }
    }
}
