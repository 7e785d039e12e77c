import Foundation
import HTTPCore
import Logging
import OfflineQueue
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// The sd_notify protocol, spoken directly: datagrams to the unix socket named by
/// `NOTIFY_SOCKET` (a path, or `@name` for an abstract socket). No libsystemd.
struct SystemdNotifier: Sendable {
    let socketPath: String
    /// `WATCHDOG_USEC`, when systemd asks for watchdog pings: with no ping for this long,
    /// systemd deems the service hung and restarts it.
    let watchdogTimeout: Duration?

    /// A notifier when `NOTIFY_SOCKET` is set, `nil` otherwise.
    init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        socketPath = path
        if let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0,
           environment["WATCHDOG_PID"].map({ $0 == String(getpid()) }) ?? true {
            watchdogTimeout = .microseconds(microseconds)
        } else {
            watchdogTimeout = nil
        }
    }

    /// The longest the queue service may wait between iterations of its loop when idle, so
    /// that an idle but healthy service still beats well within ``watchdogTimeout``.
    var idleLimit: Duration? { watchdogTimeout.map { $0 / 4 } }

    /// Sends `state` (such as `READY=1`); returns whether it went out.
    @discardableResult
    func notify(_ state: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }   // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, message, message.count, Int32(MSG_NOSIGNAL), socketAddress, length)
            }
        }
        return sent == message.count
    }
}

/// A service that speaks for the queue service to systemd: `READY=1` when it is up, `STATUS=`
/// with live counts whenever they change (at most once a second), `WATCHDOG=1` only when the
/// queue service's loop has gone round since the last ping, and `STOPPING=1` (with
/// `EXTEND_TIMEOUT_USEC=` when sends in flight need the grace period) when a graceful
/// shutdown starts.
struct NotifierService: Service {
    let notifier: SystemdNotifier
    let queue: OfflineQueue
    let heartbeat: ServiceHeartbeat
    /// How long the queue service lets sends in flight finish when stopping.
    let shutdownGrace: Duration
    let logger: Logger
    /// This process's sends and deliveries, from the queue's events.
    private let activity = SendActivity()
    private let events: AsyncStream<QueueEvent>

    /// Subscribes to the queue's events at once, before the group starts, so no attempt of
    /// the first drain is missed.
    init(notifier: SystemdNotifier, queue: OfflineQueue, heartbeat: ServiceHeartbeat, shutdownGrace: Duration, logger: Logger) {
        self.notifier = notifier
        self.queue = queue
        self.heartbeat = heartbeat
        self.shutdownGrace = shutdownGrace
        self.logger = logger
        self.events = queue.events()
    }

    /// Time allowed after the grace for the rest of the shutdown (giving entries back,
    /// closing the transport).
    static let shutdownMargin = Duration.seconds(5)
    /// The shortest gap between two `STATUS=` messages.
    static let statusInterval = Duration.seconds(1)

    func run() async throws {
        let status = await statusLine()
        notifier.notify("READY=1\nSTATUS=" + (status ?? "started"))
        logger.debug("sent READY=1", metadata: ["socket": "\(notifier.socketPath)"])
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
        notifier.notify(stopping)
        logger.debug("sent STOPPING=1", metadata: ["message": "\(stopping)"])
    }

    /// `WATCHDOG=1` after each heartbeat, but not more often than every eighth of the
    /// timeout. The service beats at least every quarter of it when idle (see
    /// ``SystemdNotifier/idleLimit``), so a live service pings at least every 3/8 of the
    /// timeout, and a stuck loop stops the pings and lets systemd act.
    private func pingWatchdog(timeout: Duration) async {
        let gap = timeout / 8
        var lastPing: ContinuousClock.Instant?
        for await _ in heartbeat.beats() {
            let now = ContinuousClock.now
            if let lastPing, now - lastPing < gap { continue }
            notifier.notify("WATCHDOG=1")
            lastPing = now
        }
    }

    /// Sends `STATUS=` when the line changed, looking after each heartbeat (the loop went
    /// round, or an attempt started or ended), at most once per ``statusInterval``: beats
    /// during the pause arrive as one, and the line sent then is the latest.
    private func reportStatus(after initial: String?) async {
        var last = initial
        var sentAt = BootClock.uptime()
        for await _ in heartbeat.beats() {
            await BootClock.sleep(untilUptime: sentAt + Self.statusInterval.seconds)
            if Task.isCancelled { return }   // the service is stopping
            guard let line = await statusLine(), line != last else { continue }
            notifier.notify("STATUS=" + line)
            last = line
            sentAt = BootClock.uptime()
        }
    }

    /// "pending 3, in flight 2, dead 0, last delivery 2025-06-01T12:00:03Z", or `nil` when the
    /// counts cannot be read (the next beat tries again).
    private func statusLine() async -> String? {
        do {
            let counts = try await queue.counts()
            let delivered = activity.lastDelivery.map { Date.ISO8601FormatStyle().format($0) } ?? "none yet"
            return "pending \(counts.pending), in flight \(counts.inflight), dead \(counts.dead), last delivery \(delivered)"
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
/// way and when the last delivery was.
private final class SendActivity: Sendable {
    private struct State {
        var inFlight: Set<EntryID> = []
        var lastDelivery: Date?
    }

    private let state = LockedBox(State())

    var sendsInFlight: Int { state.current.inFlight.count }
    var lastDelivery: Date? { state.current.lastDelivery }

    func follow(_ events: AsyncStream<QueueEvent>) async {
        for await event in events {
            state.withLock { state in
                switch event {
                case .attemptStarted(let id, _):
                    state.inFlight.insert(id)
                case .delivered(let id, _):
                    state.inFlight.remove(id)
                    state.lastDelivery = Date()
                case .willRetry(let id, _, _), .waitingForNetwork(let id), .deadLettered(let id, _, _),
                     .released(let id), .leaseLost(let id):
                    state.inFlight.remove(id)
                case .enqueued:
                    break
                }
            }
        }
    }
}
