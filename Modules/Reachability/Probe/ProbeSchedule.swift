import Foundation
import HTTPCore
import HTTPTypes

/// The engine of a ``ProbeMonitor``: one probe, and the loop that schedules probes.
///
/// Kept apart from the monitor so the running loop does not hold the monitor: releasing the
/// monitor stops it. Sendable: every stored property is a constant of a Sendable type.
struct ProbeSchedule: Sendable {
    let configuration: ProbeConfiguration
    let transport: any Transport
    let upstream: (any NetworkMonitor)?
    let sleep: ProbeMonitor.Sleep
    let broadcast: StatusBroadcast
    let outcomes = LockedBox<[ProbeOutcome]>([])

    /// Probes once. Returns by the timeout even when the transport does not stop at once on
    /// cancellation; the exchange is cancelled then.
    func probe() async -> ProbeOutcome {
        let request = HTTPRequest(method: .get, url: configuration.url)
        let (timeout, limit, transport) = (configuration.timeout, configuration.maxBodySize, transport)
        let configuration = configuration
        let state = LockedBox<(continuation: CheckedContinuation<ProbeOutcome, Never>?, exchange: Task<Void, Never>?, timer: Task<Void, Never>?)>((nil, nil, nil))
        let finish: @Sendable (ProbeOutcome) -> Void = { outcome in
            let (continuation, exchange, timer) = state.withLock { state in
                defer { state = (nil, nil, nil) }
                return state
            }
            exchange?.cancel()
            timer?.cancel()
            continuation?.resume(returning: outcome)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.withLock { $0.continuation = continuation }
                let exchange = Task {
                    do {
                        let response = try await transport.send(request, body: nil, timeout: timeout)
                        let body = try await response.body.collect(upTo: limit)
                        finish(ProbeOutcome.judge(status: response.head.status.code, body: body, against: configuration))
                    } catch {
                        finish(.failed("\(NetworkError(error))"))
                    }
                }
                let timer = Task {
                    await BootClock.sleep(for: timeout)
                    if Task.isCancelled { return }
                    finish(.failed("\(NetworkError.transport(TransportFailure(.timedOut, "no answer within \(timeout)")))"))
                }
                state.withLock { state in
                    guard state.continuation != nil else { return }  // already finished
                    state.exchange = exchange
                    state.timer = timer
                }
                if state.current.continuation == nil {
                    exchange.cancel()
                    timer.cancel()
                }
            }
        } onCancel: {
            finish(.failed("\(NetworkError.cancelled)"))
        }
    }

    /// Probes now, then on the schedule and on every upstream change, until cancelled.
    func run() async {
        let wakes = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .unbounded)
        // Subscribe before the loop reads the upstream status, so a change that lands between
        // the two is never lost (the first element is the status at subscription).
        let updates = upstream?.statusUpdates()
        let watcher = Task {
            guard let updates else { return }
            for await _ in updates.dropFirst() { wakes.continuation.yield(.upstream) }
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
                outcomes.withLock { $0.append(outcome) }
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
