import Foundation
import HTTPCore
public import Logging
import Reachability
public import ServiceLifecycle

/// The queue as a background service: drains whenever something is due and the network is
/// there, and shuts down gracefully.
///
/// It wakes at once when the monitor reports the network back (entries that waited for it
/// become due), when this process enqueues, retries or resumes, when another process enqueues
/// and the store can tell (SQLite's wake file, PostgreSQL's `NOTIFY`), and when the next
/// backoff ends; every `pollInterval` otherwise, to see what the store could not tell it.
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
///
/// It reads the queue's counts into its gauges (``QueueMetricsOptions``) every
/// `gaugeInterval` and at the end of each drain.
///
/// It applies the queue's retention (``OfflineQueue/applyRetention(now:)``) when it starts
/// and then every `retentionInterval`, between drains, and beats its ``heartbeat`` as its loop
/// goes round, for a supervisor's watchdog.
///
/// Every wait of the service (the poll, the next due time, retention's interval, the shutdown
/// grace, the gauges' interval) and ``liveness()`` are on the queue's clock
/// (``QueueConfiguration/clock``), so a test that gives the queue a ``ManualQueueClock`` moves
/// them all; the system clock, the default, reads the boot clock, as a watchdog outside the
/// process would.
public struct QueueService: Service {
    /// The queue the service drains.
    public let queue: OfflineQueue
    /// How often the service looks for work when nothing woke it, on the queue's clock.
    public let pollInterval: Duration
    /// How long sends in flight may go on once a graceful shutdown begins; then they are
    /// cancelled and their entries given back.
    public let shutdownGrace: Duration
    /// How often delivered entries past their retention are deleted.
    public let retentionInterval: Duration
    /// Where the service logs its start and stop, its drains, retention and the network's return.
    public let logger: Logger
    /// How long one store call may run before ``liveness()`` calls the service stuck.
    public let storeCallLimit: Duration
    /// Beats each time the loop completes an iteration (a drain or an idle wait) and each
    /// time a drain under way finishes or starts an attempt: proof that the service is not
    /// stuck, for a watchdog.
    public let heartbeat = QueueService.Heartbeat()
    /// Stopped on graceful shutdown: the loop ends and the drain under way stops claiming.
    private let control = DrainControl()

    /// A service that drains `queue`; `OfflineQueue.service(logger:)` makes one with the same
    /// defaults and a logger labelled `courier.queue`.
    public init(
        queue: OfflineQueue, pollInterval: Duration = .seconds(5), shutdownGrace: Duration = .seconds(8),
        retentionInterval: Duration = .seconds(3600), storeCallLimit: Duration = .seconds(30), logger: Logger
    ) {
        self.storeCallLimit = storeCallLimit
        self.queue = queue
        self.pollInterval = pollInterval
        self.shutdownGrace = shutdownGrace
        self.retentionInterval = retentionInterval
        self.logger = logger
    }

    /// Whether the service is demonstrably alive, for a watchdog: its loop has gone round within
    /// `pollInterval` and a margin (or something is under way), every send in flight is younger
    /// than its timeout and a margin, and no store call has run longer than `storeCallLimit`.
    /// A service that hangs in any of these stops being alive until it moves again, so a
    /// watchdog that pings only while it is alive lets a supervisor restart a hung process
    /// (whose leases die with it).
    public func liveness() -> ServiceLiveness {
        queue.watch.liveness(at: queue.configuration.clock.now().uptime, storeCallLimit: storeCallLimit, idleLimit: pollInterval + Self.loopMargin)
    }

    /// How long past `pollInterval` a loop may take to go round before it counts as wedged.
    static let loopMargin = Duration.seconds(5)
    /// How often a service counts the backlog for the activity per minute and stores its counts.
    static let activityInterval = Duration.seconds(30)

    /// The loop went round: a beat for watchers, and progress for ``liveness()``.
    private func turned() {
        queue.watch.progressed()
        heartbeat.beat()
    }

    public func run() async throws {
        // Watchers of the heartbeat hear that the loop is over, instead of waiting forever.
        defer { heartbeat.finish() }
        try await withGracefulShutdownHandler {
            try await runLoop()
        } onGracefulShutdown: {
            shutDown()
        }
    }

    /// Starts a graceful shutdown, as a `ServiceGroup` does on SIGTERM; for running the service
    /// outside a group.
    public func shutDown() {
        control.stop()
        queue.enqueued.fire()
    }

    /// One drain, as children of a task group: the drain, and a watcher that on shutdown stops
    /// its claiming and, `shutdownGrace` later (on the queue's clock), cancels it, so that its
    /// sends are cut short and their entries given back. Neither outlives the call.
    private func drainWithGrace() async throws -> DrainSummary {
        let drainControl = DrainControl()
        return try await withThrowingTaskGroup(of: DrainSummary?.self) { [queue, control, shutdownGrace] group in
            group.addTask { try await queue.drain(.untilIdle, control: drainControl) }
            group.addTask {
                await control.stopRequested()
                drainControl.stop()
                let clock = queue.configuration.clock
                await clock.sleep(clock.now().uptime + shutdownGrace.seconds)
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let summary = result { return summary }
                // The grace is over: cut the sends short.
                group.cancelAll()
            }
            throw CancellationError()
        }
    }

    private func runLoop() async throws {
        let wake = queue.enqueued
        // The network watcher is a child task: it ends with the loop, never outliving it.
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let monitor = queue.monitor {
                group.addTask { [logger] in
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
            }
            if queue.metrics.isRecording {
                // The gauges between drains too: a long drain, or none while offline. Only when
                // a backend is there when the service starts: otherwise the service stays quiet.
                group.addTask { [queue] in
                    let clock = queue.configuration.clock
                    while !Task.isCancelled {
                        try? await queue.refreshGauges(maxAge: .seconds(1))
                        await clock.sleep(clock.now().uptime + queue.metrics.options.gaugeInterval.seconds)
                    }
                }
            }
            // The backlog for the activity per minute (the console's chart), counted every half
            // minute even while nothing drains, and what the drains counted, stored.
            group.addTask { [queue] in
                let clock = queue.configuration.clock
                while !Task.isCancelled {
                    await clock.sleep(clock.now().uptime + Self.activityInterval.seconds)
                    if Task.isCancelled { break }
                    _ = try? await queue.recentCounts(maxAge: Self.activityInterval / 2)
                    try? await queue.activityBook.flush()
                }
            }
            defer { group.cancelAll() }
            try await serve(wake: wake)
        }
    }

    /// The loop: drain while there is work and the network is there, wait otherwise; what comes
    /// next is the schedule's word (``ServiceSchedule``), every wait on the queue's clock.
    private func serve(wake: WakeSignal) async throws {
        logger.info("queue service started", metadata: ["db": "\(queue.location)"])
        queue.watch.progressed()
        do {
            try await queue.watch.storeCall(.sweep) { () async throws(QueueError) in try await queue.sweepOrphanBodies() }
        } catch {
            logger.warning("could not sweep orphan body files", metadata: ["error": "\(error)"])
        }
        let clock = queue.configuration.clock
        var schedule = ServiceSchedule(pollInterval: pollInterval, retentionInterval: retentionInterval)
        // Taken before each drain: a wake-up during it (an enqueue here or elsewhere, the
        // network back) ends the wait after it at once.
        var mark = wake.mark
        // The network was seen gone: the first drain after it returns waits the reconnect spread.
        var returning = false
        while !control.isStopped && !Task.isCancelled {
            switch schedule.next(at: clock.now()) {
            case .applyRetention:
                await applyRetention()
                schedule.retentionApplied(at: clock.now())
            case .drain:
                if let spread = queue.configuration.flow.reconnectSpread, let monitor = queue.monitor {
                    if !monitor.status.isOnline {
                        returning = true
                    } else if returning {
                        returning = false
                        await waitReconnectSpread(spread)
                        if control.isStopped || Task.isCancelled { break }
                    }
                }
                mark = wake.mark
                let began = clock.now()
                let (didWork, nextDue) = try await drainOnce()
                schedule.drained(didWork: didWork, nextDue: nextDue, began: began)
                logger.debug("drain ended", metadata: [
                    "did_work": "\(didWork)", "began_uptime": "\(began.uptime)", "next_due_uptime": "\(nextDue.map { "\($0.uptime)" } ?? "none")",
                ])
                turned()
            case .wait(let until):
                if control.isStopped || Task.isCancelled { break }
                logger.debug("idle until woken", metadata: ["until_uptime": "\(until)"])
                await wake.wait(after: mark) { await clock.sleep(until) }
                schedule.woke()
                turned()
            }
        }
        logger.info("queue service stopped")
    }

    /// The host's share of `spread` (``FlowControl/reconnectSpread``), on the queue's clock, or
    /// until a stop: a fleet that regains the network together replays spread over it.
    private func waitReconnectSpread(_ spread: Duration) async {
        let clock = queue.configuration.clock
        let delay = spread.seconds * FlowControl.hostShare
        logger.info("network is back: waiting this host's share of the reconnect spread", metadata: ["seconds": "\(delay)"])
        await withTaskGroup(of: Void.self) { [control] group in
            group.addTask { await clock.sleep(clock.now().uptime + delay) }
            group.addTask { await control.stopRequested() }
            await group.next()
            group.cancelAll()
        }
    }

    /// One drain when the network is there: whether it did work, and when something is next
    /// due. Throws only what must stop the service (keys that do not fit, a changed row).
    private func drainOnce() async throws -> (didWork: Bool, nextDue: DueTime?) {
        guard queue.monitor?.status.isOnline ?? true else { return (false, nil) }
        do {
            // Events during the drain beat too: a drain that keeps a steady stream of entries
            // moving may not return for a long time, and is not stuck.
            let summary = try await heartbeat.beating(during: queue.events(bufferingPolicy: .bufferingNewest(1))) {
                try await drainWithGrace()
            }
            let didWork = summary.delivered + summary.failed + summary.dead + summary.waitingForNetwork > 0
            if didWork {
                logger.info("drained", metadata: [
                    "delivered": "\(summary.delivered)", "failed": "\(summary.failed)", "dead": "\(summary.dead)",
                    "remaining": "\(summary.remaining)",
                ])
            }
            return (didWork, summary.nextDue)
        } catch let error as QueueError where error.kind == .keyUnavailable || error.kind == .sealBroken {
            // Not passing: the keys do not fit the queue, or a row was changed. Nothing was
            // sent; the service stops, so that its manager reports the failure.
            logger.critical("drain refused", metadata: ["error": "\(error)"])
            throw error
        } catch {
            logger.error("drain failed", metadata: ["error": "\(error)"])
            return (false, nil)
        }
    }

    /// One retention pass, logged; a failure is logged and retried at the next pass.
    private func applyRetention() async {
        do {
            let removed = try await queue.watch.storeCall(.retention) { () async throws(QueueError) in try await queue.applyRetention() }
            let metadata: Logger.Metadata = [
                "entries": "\(removed.deletedEntries)", "body_files": "\(removed.deletedBodyFiles)",
                "pages": "\(removed.releasedPages)",
            ]
            if removed.deletedEntries > 0 || removed.releasedPages > 0 {
                logger.info("retention removed delivered entries", metadata: metadata)
            } else {
                logger.debug("retention found nothing to remove")
            }
        } catch {
            logger.warning("retention failed", metadata: ["error": "\(error)"])
        }
    }
}

extension QueueService {
    /// A running count of a ``QueueService``'s progress, to tell a live service from a stuck one.
    ///
    /// ```swift
    /// let service = queue.service(logger: logger)
    /// for await _ in service.heartbeat.beats() {
    ///     watchdog.ping()   // the loop went round since the last beat
    /// }
    /// ```
    ///
    /// Streams from ``beats()`` end when the service's `run()` returns.
    public final class Heartbeat: Sendable {
        private struct State {
            var count: UInt64 = 0
            var finished = false
            var watchers: [UUID: AsyncStream<UInt64>.Continuation] = [:]
        }

        private let state = LockedBox(State())
        /// Held while a count goes out, so watchers see counts in order; never taken by a watcher's
        /// termination (see ``EventBroadcast/publish(_:)`` for the deadlock yielding under `state`
        /// would allow).
        private let delivery = LockedBox(())

        init() {}

        /// How many beats so far.
        public var count: UInt64 { state.current.count }

        /// The count after each beat from now on. A slow reader gets the latest count, not a
        /// backlog: beats while it was busy arrive as one.
        public func beats() -> AsyncStream<UInt64> {
            let (stream, continuation) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingNewest(1))
            let id = UUID()
            let finished = state.withLock { state -> Bool in
                if !state.finished { state.watchers[id] = continuation }
                return state.finished
            }
            if finished {
                continuation.finish()
            } else {
                continuation.onTermination = { [weak self] _ in
                    _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
                }
            }
            return stream
        }

        func beat() {
            delivery.withLock { _ in
                let (count, watchers) = state.withLock { state in
                    state.count += 1
                    return (state.count, Array(state.watchers.values))
                }
                for watcher in watchers { watcher.yield(count) }
            }
        }

        func finish() {
            let watchers = state.withLock { state -> [AsyncStream<UInt64>.Continuation] in
                state.finished = true
                defer { state.watchers.removeAll() }
                return Array(state.watchers.values)
            }
            for watcher in watchers { watcher.finish() }
        }

        /// Runs `body`, beating for every attempt event `events` carries meanwhile. The reader is
        /// a child task: it ends with `body`, never outliving it.
        func beating<Result: Sendable>(
            during events: AsyncStream<QueueEvent>, _ body: () async throws -> Result
        ) async throws -> Result {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in events {
                        // Enqueues by the app say nothing about the drain.
                        if case .enqueued = event { continue }
                        self.beat()
                    }
                }
                defer { group.cancelAll() }
                return try await body()
            }
        }
    }
}

extension OfflineQueue {
    /// This queue as a swift-service-lifecycle `Service`. Run one service per queue.
    public func service(
        pollInterval: Duration = .seconds(5), shutdownGrace: Duration = .seconds(8),
        retentionInterval: Duration = .seconds(3600), storeCallLimit: Duration = .seconds(30),
        logger: Logger = Logger(label: "courier.queue")
    ) -> QueueService {
        QueueService(
            queue: self, pollInterval: pollInterval, shutdownGrace: shutdownGrace,
            retentionInterval: retentionInterval, storeCallLimit: storeCallLimit, logger: logger
        )
    }
}
