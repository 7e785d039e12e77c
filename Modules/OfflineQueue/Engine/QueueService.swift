import Foundation
import HTTPCore
public import Logging
import Reachability
public import ServiceLifecycle

/// The queue as a background service: drains whenever something is due and the network is
/// there, and shuts down gracefully.
///
/// It wakes at once when the monitor reports the network back (entries that waited for it
/// become due), when this process enqueues, and when the next backoff ends; every
/// `pollInterval` otherwise, to see entries other processes added.
///
/// ```swift
/// let group = ServiceGroup(
///     services: [queue.service(logger: logger), myHTTPServer],
///     gracefulShutdownSignals: [.sigterm, .sigint],
///     logger: logger
/// )
/// try await group.run()
/// ```
///
/// On graceful shutdown it stops claiming, lets sends in flight finish for up to
/// `shutdownGrace`, then cancels them and gives their entries back, and returns.
public struct QueueService: Service {
    public let queue: OfflineQueue
    public let pollInterval: Duration
    public let shutdownGrace: Duration
    public let logger: Logger
    private let control = ServiceControl()

    public init(queue: OfflineQueue, pollInterval: Duration = .seconds(5), shutdownGrace: Duration = .seconds(8), logger: Logger) {
        self.queue = queue
        self.pollInterval = pollInterval
        self.shutdownGrace = shutdownGrace
        self.logger = logger
    }

    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await runLoop()
        } onGracefulShutdown: { [control, queue, shutdownGrace] in
            control.shutDown(grace: shutdownGrace, wake: queue.enqueued)
        }
    }

    /// Starts a graceful shutdown, as a `ServiceGroup` does on SIGTERM; for running the service
    /// outside a group.
    public func shutDown() {
        control.shutDown(grace: shutdownGrace, wake: queue.enqueued)
    }

    private func runLoop() async throws {
        let wake = queue.enqueued
        let watcher = Task { [queue, logger] in
            guard let monitor = queue.monitor else { return }
            var wasOnline = monitor.status.isOnline
            for await status in monitor.statusUpdates() {
                logger.debug("network status", metadata: ["status": "\(status)"])
                if status.isOnline && !wasOnline {
                    // The drain this wakes makes the entries that waited for the network due.
                    logger.info("network is back", metadata: ["status": "\(status)"])
                }
                wasOnline = status.isOnline
                wake.fire()
            }
        }
        defer { watcher.cancel() }
        logger.info("queue service started", metadata: ["db": "\(queue.configuration.path)"])
        do {
            try await queue.sweepOrphanBodies()
        } catch {
            logger.warning("could not sweep orphan body files", metadata: ["error": "\(error)"])
        }

        while !control.isStopping && !Task.isCancelled {
            let online = queue.monitor?.status.isOnline ?? true
            var didWork = false
            var nextAttemptAt: Date?
            if online {
                let drainControl = DrainControl()
                let task = Task { try await queue.drain(.untilIdle, control: drainControl) }
                control.begin(drainControl, task: task)
                do {
                    let summary = try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
                    didWork = summary.delivered + summary.failed + summary.dead + summary.waitingForNetwork > 0
                    nextAttemptAt = summary.nextAttemptAt
                    if didWork {
                        logger.info("drained", metadata: [
                            "delivered": "\(summary.delivered)", "failed": "\(summary.failed)", "dead": "\(summary.dead)",
                            "remaining": "\(summary.remaining)",
                        ])
                    }
                } catch {
                    logger.error("drain failed", metadata: ["error": "\(error)"])
                }
                control.end()
            }
            if control.isStopping || Task.isCancelled { break }
            var delay = pollInterval
            if let next = nextAttemptAt {
                let untilNext = Duration.milliseconds(Int64(max(0, next.timeIntervalSinceNow) * 1000))
                delay = min(delay, max(untilNext, didWork ? .zero : .milliseconds(100)))
            }
            if delay > .zero { await wake.wait(timeout: delay) }
        }
        logger.info("queue service stopped")
    }
}

extension OfflineQueue {
    /// This queue as a swift-service-lifecycle `Service`. Run one service per queue.
    public func service(pollInterval: Duration = .seconds(5), shutdownGrace: Duration = .seconds(8), logger: Logger = Logger(label: "courier.queue")) -> QueueService {
        QueueService(queue: self, pollInterval: pollInterval, shutdownGrace: shutdownGrace, logger: logger)
    }
}

/// The service's shutdown state and the drain under way.
private final class ServiceControl: Sendable {
    private struct State {
        var stopping = false
        var drain: DrainControl?
        var task: Task<DrainSummary, any Error>?
    }

    private let state = LockedBox(State())

    var isStopping: Bool { state.current.stopping }

    func begin(_ drain: DrainControl, task: Task<DrainSummary, any Error>) {
        let stopNow = state.withLock { state -> Bool in
            state.drain = drain
            state.task = task
            return state.stopping
        }
        if stopNow { drain.stop() }
    }

    func end() {
        state.withLock { state in
            state.drain = nil
            state.task = nil
        }
    }

    /// Stops claiming now; cancels the drain under way after `grace`.
    func shutDown(grace: Duration, wake: WakeSignal) {
        let drain = state.withLock { state -> DrainControl? in
            state.stopping = true
            return state.drain
        }
        drain?.stop()
        wake.fire()
        Task { [weak self] in
            try? await Task.sleep(for: grace)
            self?.state.withLock { $0.task }?.cancel()
        }
    }
}
