import Foundation
public import HTTPCore
import HTTPTypes

/// Checks that the world answers: fetches a known URL through any HTTPCore ``Transport`` and
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
    public let configuration: ProbeConfiguration
    private let transport: any Transport
    private let upstream: (any NetworkMonitor)?
    private let sleep: Sleep
    private let broadcast: StatusBroadcast
    private let run = LockedBox<(task: Task<Void, Never>?, outcomes: [ProbeOutcome])>((nil, []))

    /// - Parameters:
    ///   - transport: carries the probe; any HTTPCore transport.
    ///   - upstream: a monitor whose changes trigger a probe at once, and whose offline status
    ///     is passed through without probing (usually a ``NetlinkMonitor``).
    ///   - sleep: waits between probes; `Task.sleep(for:)` unless a test supplies its own.
    public init(configuration: ProbeConfiguration, transport: any Transport, upstream: (any NetworkMonitor)? = nil, sleep: Sleep? = nil) {
        self.configuration = configuration
        self.transport = transport
        self.upstream = upstream
        self.sleep = sleep ?? { try await Task.sleep(for: $0) }
        let initial: NetworkStatus = if let upstream, upstream.status.isOffline { upstream.status } else { .limited(.unprobed) }
        broadcast = StatusBroadcast(initial)
    }

    deinit { stop() }

    /// The status now.
    public var status: NetworkStatus { broadcast.status }

    /// The current status at once, then every change, until ``stop()``.
    public func statusUpdates() -> AsyncStream<NetworkStatus> { broadcast.stream() }

    /// Every probe outcome so far, oldest first (kept for diagnostics and tests).
    public var outcomes: [ProbeOutcome] { run.current.outcomes }

    /// Starts probing; calling it again does nothing.
    public func start() {
        run.withLock { run in
            guard run.task == nil, !broadcast.isFinished else { return }
            run.task = Task { [weak self] in await self?.loop() }
        }
    }

    /// Stops probing and ends every stream.
    public func stop() {
        let task = run.withLock { run in
            defer { run.task = nil }
            return run.task
        }
        task?.cancel()
        broadcast.finish()
    }

    /// Probes once now and returns the outcome, without publishing it.
    public func probe() async -> ProbeOutcome {
        let request = HTTPRequest(method: .get, url: configuration.url)
        let timeout = configuration.timeout
        let limit = configuration.maxBodySize
        do {
            let (status, body) = try await withThrowingTaskGroup(of: (Int, Data)?.self) { group in
                group.addTask { [transport] in
                    let response = try await transport.send(request, body: nil, timeout: timeout)
                    return (response.head.status.code, try await response.body.collect(upTo: limit))
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let answer = first else {
                    throw NetworkError.transport(TransportFailure(.timedOut, "no answer within \(timeout)"))
                }
                return answer
            }
            return ProbeOutcome.judge(status: status, body: body, against: configuration)
        } catch {
            return .failed("\(NetworkError(error))")
        }
    }

    private func loop() async {
        let wakes = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .unbounded)
        let watcher = Task { [upstream] in
            guard let upstream else { return }
            for await _ in upstream.statusUpdates().dropFirst() { wakes.continuation.yield(.upstream) }
        }
        defer {
            watcher.cancel()
            wakes.continuation.finish()
        }
        var iterator = wakes.stream.makeAsyncIterator()
        var failures = 0
        var generation = 0
        while !Task.isCancelled {
            let delay: Duration
            if let upstream, case .offline = upstream.status {
                broadcast.publish(upstream.status)
                failures = 0
                delay = configuration.interval
            } else {
                let outcome = await probe()
                if Task.isCancelled { return }
                run.withLock { $0.outcomes.append(outcome) }
                broadcast.publish(status(after: outcome))
                failures = outcome == .passed ? 0 : failures + 1
                delay = failures == 0 ? configuration.interval : configuration.backoff.delay(forRetry: failures, unitRandom: Double.random(in: 0..<1))
            }
            generation += 1
            let timer = Task { [sleep, generation] in
                do { try await sleep(delay) } catch { return }
                wakes.continuation.yield(.timer(generation))
            }
            defer { timer.cancel() }
            waiting: while true {
                switch await iterator.next() {
                case nil: return
                case .upstream: break waiting
                case .timer(let fired) where fired == generation: break waiting
                case .timer: continue
                }
            }
        }
    }

    private func status(after outcome: ProbeOutcome) -> NetworkStatus {
        switch outcome {
        case .passed:
            if let upstream, case .online = upstream.status { return upstream.status }
            return .online(interface: "", family: .ipv4)
        case .captivePortal:
            return .limited(.captivePortal)
        case .failed:
            return .limited(.probeFailed)
        }
    }

    private enum Wake: Sendable {
        case upstream
        case timer(Int)
    }
}
