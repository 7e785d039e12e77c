import Foundation
import HTTPCore
public import Logging
public import OfflineQueueCore
public import ServiceLifecycle

/// A service that speaks for a `QueueService` to systemd: `READY=1` when it is up, `STATUS=`
/// with the queue's state whenever it changes (at most once a second), `WATCHDOG=1` only while
/// the queue service is demonstrably alive (`QueueService.liveness()`), and `STOPPING=1`
/// (with `EXTEND_TIMEOUT_USEC=` when sends in flight need the grace period) when a graceful
/// shutdown starts.
///
/// `STATUS=` speaks for the queue, not this process: its counts are the store's (every
/// process's work, read at most once a second and shared with the metrics gauges), followed by
/// this process's own deliveries in the last minute.
///
/// Put it in the same `ServiceGroup` as the queue service, after it (a group stops its
/// services in reverse order, so systemd hears `STOPPING=1` before the queue winds down):
///
/// ```swift
/// let service = queue.service(shutdownGrace: .seconds(5), logger: logger)
/// var services: [any Service] = [service]
/// if let notifier = SystemdNotifier() {
///     services.append(SystemdQueueService(notifier: notifier, service: service, shutdownGrace: .seconds(5), logger: logger))
/// }
/// try await ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm], logger: logger).run()
/// ```
///
/// The unit: `Type=notify`, and `WatchdogSec=` for the watchdog (Docs/Deployment.md).
public struct SystemdQueueService: Service {
    let notifier: SystemdNotifier
    let service: QueueService
    /// How long the queue service lets sends in flight finish when stopping.
    let shutdownGrace: Duration
    let logger: Logger
    /// This process's sends and deliveries, from the queue's events.
    private let activity = SendActivity()
    private let events: AsyncStream<QueueEvent>

    var queue: OfflineQueue { service.queue }

    /// Subscribes to the queue's events at once, before the group starts, so no attempt of
    /// the first drain is missed.
    ///
    /// - Parameters:
    ///   - notifier: where the readiness, status and watchdog messages go.
    ///   - service: the queue's service, which this one runs.
    ///   - shutdownGrace: the grace the queue service gives sends in flight when it stops (its
    ///     `shutdownGrace`), announced to systemd with `EXTEND_TIMEOUT_USEC=`.
    ///   - logger: where the messages sent to systemd, and failures to send them, are logged.
    public init(notifier: SystemdNotifier, service: QueueService, shutdownGrace: Duration, logger: Logger) {
        self.notifier = notifier
        self.service = service
        self.shutdownGrace = shutdownGrace
        self.logger = logger
        self.events = service.queue.events()
    }

    /// Time allowed after the grace for the rest of the shutdown (giving entries back,
    /// closing the transport).
    static let shutdownMargin = Duration.seconds(5)
    /// The shortest gap between two `STATUS=` messages.
    static let statusInterval = Duration.seconds(1)
    /// How long `READY=1` and `STOPPING=1` wait for room on a notify socket whose queue is full
    /// (a ping or a status line that finds it full is dropped: the next one follows).
    static let patience = Duration.seconds(2)

    public func run() async throws {
        let status = await statusLine()
        if await notifier.notify("READY=1\nSTATUS=" + (status ?? "started"), patience: Self.patience) {
            logger.debug("sent READY=1", metadata: ["socket": "\(notifier.socketPath)"])
        } else {
            logger.warning("could not send READY=1: the notify socket is gone or its queue stayed full", metadata: ["socket": "\(notifier.socketPath)"])
        }
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await activity.follow(events) }
                group.addTask { await reportStatus(after: status) }
                if let timeout = notifier.watchdogTimeout {
                    group.addTask { await pingWatchdog(timeout: timeout) }
                }
            }
        }
        // The group shuts services down in reverse order: this one (listed last) first, so
        // systemd hears STOPPING=1 before the queue starts winding down.
        var stopping = "STOPPING=1"
        if activity.sendsInFlight > 0 {
            // systemd's stop timeout may be shorter than the grace the sends get.
            let allowance = shutdownGrace + Self.shutdownMargin
            stopping += "\nEXTEND_TIMEOUT_USEC=\(Self.microseconds(allowance))"
        }
        if await notifier.notify(stopping, patience: Self.patience) {
            logger.debug("sent STOPPING=1", metadata: ["message": "\(stopping)"])
        } else {
            logger.warning("could not send STOPPING=1: the notify socket is gone or its queue stayed full", metadata: ["socket": "\(notifier.socketPath)"])
        }
    }

    /// Every quarter of the timeout, `WATCHDOG=1` if the queue service is alive, nothing if it
    /// is stuck (a send past its timeout, a store call past its bound, a loop that stopped):
    /// systemd then restarts the process, whose claims die with it. The timer is on the boot
    /// clock and independent of the loop it judges, so a hung drain cannot hold it up.
    private func pingWatchdog(timeout: Duration) async {
        var stuckSince: String?
        while !Task.isCancelled {
            let verdict = service.liveness()
            if verdict.isAlive {
                if !notifier.notify("WATCHDOG=1") { logger.debug("a watchdog ping was dropped: the notify socket's queue is full") }
                if stuckSince != nil {
                    logger.notice("queue service moves again: watchdog pings resumed")
                    stuckSince = nil
                }
            } else if stuckSince == nil {
                stuckSince = verdict.reason
                logger.warning("queue service stuck: watchdog pings withheld", metadata: ["reason": "\(verdict.reason ?? "")"])
                // Tell `systemctl status` why, at once.
                if let line = await statusLine() { notifier.notify("STATUS=" + line) }
            }
            await BootClock.sleep(for: timeout / 4)
        }
    }

    /// Sends `STATUS=` when the line changed, looking after each heartbeat (the loop went
    /// round, or an attempt started or ended), at most once per ``statusInterval``: beats
    /// during the pause arrive as one, and the line sent then is the latest. While this
    /// process has sends in flight it also looks every ``busyRefresh``, since other processes
    /// move the queue while a long send holds this loop; a service with nothing to do beats
    /// only at its poll, so then the status costs no wake-up of its own.
    private func reportStatus(after initial: String?) async {
        let beat = WakeSignal()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await _ in service.heartbeat.beats() { beat.fire() }
            }
            var last = initial
            var sentAt = BootClock.uptime()
            while !Task.isCancelled {
                let mark = beat.mark
                await beat.wait(after: mark, timeout: activity.sendsInFlight > 0 ? Self.busyRefresh : nil)
                await BootClock.sleep(untilUptime: sentAt + Self.statusInterval.seconds)
                if Task.isCancelled { break }   // the service is stopping
                guard let line = await statusLine(), line != last else { continue }
                // A line the socket had no room for is tried again at the next beat.
                guard notifier.notify("STATUS=" + line) else { continue }
                last = line
                sentAt = BootClock.uptime()
            }
            group.cancelAll()
        }
    }

    /// How often the status is refreshed while this process has sends in flight.
    static let busyRefresh = Duration.seconds(5)

    /// "pending 3 (due 1), in flight 2 (1 here), dead 0, oldest pending 4m, last delivery
    /// 2025-06-01T12:00:03Z; here: 12 delivered in the last minute", led by "stuck: …; " while
    /// the service is stuck, or `nil` when the counts cannot be read (the next beat tries again).
    private func statusLine() async -> String? {
        do {
            let counts = try await queue.recentCounts(maxAge: Self.statusInterval)
            let now = Date()
            let delivered = counts.lastDeliveredAt.map { Date.ISO8601FormatStyle().format($0) } ?? "none yet"
            let oldest = counts.oldestPendingCreatedAt.map { AgeText.format(max(0, now.timeIntervalSince($0))) } ?? "-"
            var line = "pending \(counts.pending) (due \(counts.due)), in flight \(counts.inflight) (\(counts.inflightHere) here), "
                + "dead \(counts.dead), " + (counts.blocked > 0 ? "blocked \(counts.blocked), " : "") + "oldest pending \(oldest), last delivery \(delivered); "
                + "here: \(activity.deliveredLastMinute) delivered in the last minute"
            // Origins held by flow control: what a server asked for, and what limits the fleet.
            let held = try await queue.originFlows().compactMap { flow -> String? in
                var parts: [String] = []
                if let circuit = flow.circuit {
                    parts.append("circuit open since \(Date.ISO8601FormatStyle().format(circuit.openedAt)) (\(circuit.lastError ?? "unwell"))")
                }
                if let until = flow.pausedUntil {
                    parts.append("paused until \(Date.ISO8601FormatStyle().format(until))" + (flow.pauseStatus.map { " (\($0))" } ?? ""))
                }
                if let concurrency = flow.concurrency { parts.append("concurrency \(concurrency)") }
                return parts.isEmpty ? nil : flow.origin + " " + parts.joined(separator: ", ")
            }
            if !held.isEmpty { line += "; origins: " + held.joined(separator: "; ") }
            let verdict = service.liveness()
            if let reason = verdict.reason { line = "stuck: \(reason); " + line }
            return line
        } catch {
            logger.debug("cannot read the counts for STATUS", metadata: ["error": "\(error)"])
            return nil
        }
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
    }
}

/// What this process's drains are doing, as its queue events tell: which attempts are under
/// way, and how many deliveries each of the last sixty seconds saw.
private final class SendActivity: Sendable {
    private struct State {
        var inFlight: Set<EntryID> = []
        /// Deliveries per second of the boot clock, in a ring of sixty: (second, count).
        var deliveries = [(second: Int, count: Int)](repeating: (-1, 0), count: 60)
    }

    private let state = LockedBox(State())

    var sendsInFlight: Int { state.current.inFlight.count }

    /// Deliveries by this process in the sixty seconds up to now.
    var deliveredLastMinute: Int {
        let now = Int(BootClock.uptime())
        return state.withLock { state in
            state.deliveries.reduce(0) { total, slot in now - slot.second < 60 ? total + slot.count : total }
        }
    }

    func follow(_ events: AsyncStream<QueueEvent>) async {
        for await event in events {
            state.withLock { state in
                switch event {
                case .attemptStarted(let id, _):
                    state.inFlight.insert(id)
                case .delivered(let id, _):
                    state.inFlight.remove(id)
                    let second = Int(BootClock.uptime())
                    let slot = second % 60
                    if state.deliveries[slot].second != second { state.deliveries[slot] = (second, 0) }
                    state.deliveries[slot].count += 1
                case .willRetry(let id, _, _), .waitingForNetwork(let id), .deadLettered(let id, _, _),
                     .released(let id), .leaseLost(let id), .conflicted(let id, _), .dropped(let id, _):
                    state.inFlight.remove(id)
                case .enqueued, .circuitOpened, .circuitClosed:
                    break
                }
            }
        }
    }
}

/// A length of time as `sync` and the status line show it: "42s", "5m", "3h", "2d".
package enum AgeText {
    package static func format(_ seconds: Double) -> String {
        // A stored time can be anything: keep the conversions below in range.
        guard seconds.isFinite else { return "?" }
        let seconds = min(seconds, 1e12)
        return switch seconds {
        case ..<60: "\(Int(seconds))s"
        case ..<3600: "\(Int(seconds / 60))m"
        case ..<86400: "\(Int(seconds / 3600))h"
        default: "\(Int(seconds / 86400))d"
        }
    }
}
