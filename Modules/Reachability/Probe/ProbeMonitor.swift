public import HTTPCore

/// Checks that the world answers: fetches a known URL through any HTTPCore `Transport` and
/// compares the answer with what a working network returns.
///
/// It probes at once when started, then every ``ProbeConfiguration/interval`` while the probe
/// passes and with ``ProbeConfiguration/backoff`` while it fails, and at once whenever the
/// upstream monitor's status changes. While the upstream monitor says offline it does not
/// probe and reports the upstream's status.
///
/// ```swift
/// let netlink = try NetlinkMonitor()
/// let probe = ProbeMonitor(
///     configuration: ProbeConfiguration(url: URL(string: "http://probe.example.com/204")!),
///     transport: AsyncHTTPClientTransport(),
///     upstream: netlink
/// )
/// probe.start()
/// let monitor = CombinedMonitor.all(of: [netlink, probe])
/// ```
///
/// Its status when the probe passes is the upstream's online status, or
/// `.online(interface: "", family: .ipv4)` without an upstream.
public final class ProbeMonitor: NetworkMonitor {
    /// Sleeps for a duration; injected so tests control time.
    public typealias Sleep = @Sendable (Duration) async throws -> Void

    /// What the monitor probes and how often.
    public var configuration: ProbeConfiguration { schedule.configuration }
    private let schedule: ProbeSchedule
    private let task = LockedBox<Task<Void, Never>?>(nil)

    /// A monitor that probes as `configuration` says, through `transport`; limited and unprobed
    /// until the first probe answers.
    ///
    /// - Parameters:
    ///   - configuration: the URL probed, what a working network answers, and how often.
    ///   - transport: carries the probe; any HTTPCore transport.
    ///   - upstream: a monitor whose changes trigger a probe at once, and whose offline status
    ///     is passed through without probing (usually a ``NetlinkMonitor``).
    ///   - sleep: waits between probes; on the boot clock (`BootClock`) unless a test supplies its own.
    public init(configuration: ProbeConfiguration, transport: any Transport, upstream: (any NetworkMonitor)? = nil, sleep: Sleep? = nil) {
        let initial: NetworkStatus = if let upstream, upstream.status.isOffline { upstream.status } else { .limited(.unprobed) }
        schedule = ProbeSchedule(
            configuration: configuration, transport: transport, upstream: upstream,
            sleep: sleep ?? { duration in
                await BootClock.sleep(for: duration)
                try Task.checkCancellation()
            }, broadcast: StatusBroadcast(initial)
        )
    }

    deinit { stop() }

    /// The status now.
    public var status: NetworkStatus { schedule.broadcast.status }

    /// The current status at once, then every change, until ``stop()``.
    public func statusUpdates() -> AsyncStream<NetworkStatus> { schedule.broadcast.stream() }

    /// Every probe outcome so far, oldest first (kept for diagnostics and tests).
    public var outcomes: [ProbeOutcome] { schedule.outcomes.current }

    /// Starts probing; calling it again does nothing. Releasing the monitor stops it.
    public func start() {
        task.withLock { task in
            guard task == nil, !schedule.broadcast.isFinished else { return }
            task = Task { [schedule] in await schedule.run() }
        }
    }

    /// Stops probing and ends every stream.
    public func stop() {
        let running = task.withLock { task in
            defer { task = nil }
            return task
        }
        running?.cancel()
        schedule.broadcast.finish()
    }

    /// Probes once now and returns the outcome, without publishing it. It returns by the
    /// configured timeout, whatever the transport does.
    public func probe() async -> ProbeOutcome {
        await schedule.probe()
    }
}
