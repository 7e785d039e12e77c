import Foundation
import Logging
import HTTPCore
import HTTPTypes
import Reachability

/// The drain's role: claims due entries, sends them through the client and settles what
/// became of them, over the store as a drain sees it (``QueueDrainStorage``), with the reads
/// of kept responses a child that takes values from its parents needs.
/// The policy lives in ``DrainMachine``; this is its driver: a task group whose children (the
/// sends, the store's commits, a stop watcher, a network watcher, a timer when the machine asks
/// for one) return events, and the machine's actions performed in turn.
final class QueueDrainer: Sendable {
    let configuration: QueueConfiguration
    let monitor: (any NetworkMonitor)?
    /// The client replays go through, without its retry policy (the queue retries).
    let client: APIClient
    let store: any QueueDrainStorage & QueueOperatorStorage & QueueOutcomeStorage
    /// What the sends may hold of sealed bodies' verified plaintext.
    let verifiedBodyMemory: VerifiedBodyMemory
    let broadcast: EventBroadcast
    let metrics: QueueMetrics
    let watch: ServiceWatch
    /// Counts the commits' deliveries and failures for the activity per minute.
    let activityBook: ActivityBook
    /// The origins' circuits as this process knows them: what its commits open and close.
    let circuits: OriginCircuits
    /// Stored URLs parsed for replays, once each.
    let replayTargets = ParsedURLs { text throws(QueueError) in try ReplayTarget(text) }

    init(
        configuration: QueueConfiguration, monitor: (any NetworkMonitor)?, client: APIClient, store: any QueueDrainStorage & QueueOperatorStorage & QueueOutcomeStorage,
        broadcast: EventBroadcast, metrics: QueueMetrics, watch: ServiceWatch, activityBook: ActivityBook, circuits: OriginCircuits
    ) {
        self.circuits = circuits
        self.configuration = configuration
        self.monitor = monitor
        self.client = client
        self.store = store
        self.verifiedBodyMemory = VerifiedBodyMemory(limit: configuration.sealing.verifiedBodyMemory)
        self.broadcast = broadcast
        self.metrics = metrics
        self.watch = watch
        self.activityBook = activityBook
    }

    /// Sends due entries until `mode` says the drain is over (``OfflineQueue/drain(_:concurrency:control:)``
    /// says how), and returns what the drain's machine counted. `sealing`: checked by the
    /// queue's seal gate for a drain.
    /// `conflicts`: the queue's resolver, when it has one.
    func run(
        _ mode: DrainMode, concurrency: Int?, control: DrainControl, sealing: EntrySealing, conflicts: ConflictHandling? = nil,
        originLimits: [FlowControl.OriginLimit]? = nil
    ) async throws(QueueError) -> DrainSummary {
        let clock = configuration.clock
        let started = clock.now()
        // The machine's time: seconds on the queue's boot clock since the drain began.
        let elapsed = { Duration.clamped(seconds: clock.now().uptime - started.uptime) ?? .zero }
        let online = monitor?.status.isOnline ?? true
        // The drainer's hold, and the reserve: nothing is sent unless what it gives can be
        // recorded, even once the disk is full. The fleet's limits, as this drainer was given
        // them, at its queue's first drain. And the network is there now: entries that found
        // it gone are due again.
        let preparation = DrainPreparation(wakesNetworkWaiters: online, originLimits: originLimits)
        _ = try await watch.storeCall(.preparation) { () async throws(QueueError) in try await store.prepareDrain(preparation, now: started) }
        let policy = configuration.policy
        let limit = max(1, concurrency ?? configuration.concurrency)
        // Commits of twice the concurrency, claimed while a round of claimed entries is still
        // in hand: part of a commit's cost is per commit, not per entry. Not larger: the entries
        // claimed ahead are what a newer entry of higher priority waits behind
        // (`courier-bench --queue-priority` measures how long).
        var machine = DrainMachine(settings: DrainMachine.Settings(
            limit: limit, batch: 2 * limit, reserve: limit,
            renewal: policy.renewsLeases ? policy.leaseDuration / 2 : nil, maxDelay: policy.longestDelay,
            flow: configuration.flow.settings(concurrency: limit),
            sendsPerOrigin: Self.sendsPerOrigin(configuration.sendsPerOrigin, transport: client.transport)
        ), online: online)
        await withTaskGroup(of: DrainEvent.self) { group in
            group.addTask { await control.stopRequested(); return .stop }
            if let monitor { group.addTask { await Self.change(of: monitor, from: online) } }
            var timers: [Duration] = []   // the deadlines of the timers running
            // What the metrics need of each entry sent, until its result is recorded.
            var sending: [EntryID: (name: String, createdAt: Date)] = [:]
            let recording = metrics.isRecording
            while true {
                if Task.isCancelled { machine.stop() }
                switch machine.next(at: elapsed()) {
                case .start(let entries):
                    for entry in entries {
                        if recording { sending[entry.id] = (entry.name, entry.createdAt) }
                        if broadcast.hasSubscribers { broadcast.publish(.attemptStarted(id: entry.id, attempt: entry.attempts + 1)) }
                        // Sealed entries open here, one after another (see `openAhead`).
                        let ahead = sealing.openAhead(entry)
                        let probe = machine.probes.contains(entry.id)
                        group.addTask {
                            DrainEvent.finished(await self.attemptAndSettle(entry, sealing: sealing, ahead: ahead, conflicts: conflicts, probe: probe))
                        }
                    }
                case .commit(let commit):
                    // A child task: sends keep starting and finishing while the store works.
                    let attemptedSince = mode == .once ? started.uptime : nil
                    group.addTask {
                        do throws(QueueError) {
                            let result = try await self.perform(commit, now: clock.now(), attemptedSince: attemptedSince)
                            return .committed(commit.settlements, .success(result))
                        } catch { return .committed(commit.settlements, .failure(error)) }
                    }
                case .renew(let ids):
                    do throws(QueueError) {
                        try await watch.storeCall(.renewLeases) { () async throws(QueueError) in
                            try await store.renewLeases(ids, now: clock.now(), lease: policy.leaseDuration)
                        }
                        machine.renewed(ids, at: elapsed())
                    } catch { machine.renewalFailed(error) }
                case .wait(let deadline):
                    // A timer due at or before the deadline wakes the loop in time: no second one.
                    if let deadline, !timers.contains(where: { $0 <= deadline }) {
                        timers.append(deadline)
                        group.addTask {
                            await clock.sleep(started.uptime + deadline.seconds)
                            return .tick(deadline)
                        }
                    }
                    switch await group.next() {
                    case .finished(let result)?:
                        machine.finished(result.settlement, networkGone: result.networkGone, at: elapsed())
                        if let failure = result.failure { machine.entryFailed(failure) }
                    case .committed(let settlements, .success(let result))?:
                        announce(settlements, lost: result.lost)
                        if !sending.isEmpty { record(settlements, lost: result.lost, sending: &sending) }
                        activityBook.count(settlements, lost: result.lost)
                        if !result.opened.isEmpty || !result.closed.isEmpty { circuitsChanged(result, settlements: settlements) }
                        // At most every ActivityBook.flushInterval: one small write, in a child
                        // task beside the sends (a failure keeps the counts for the next).
                        if activityBook.takeTurn() {
                            group.addTask { [activityBook] in
                                try? await activityBook.flush()
                                return .activityStored
                            }
                        }
                        machine.committed(result, at: elapsed())
                    case .committed(_, .failure(let error))?: machine.commitFailed(error)
                    case .stop?: machine.stop()
                    case .network(let online)?:
                        machine.network(online: online)
                        if let monitor { group.addTask { await Self.change(of: monitor, from: online) } }
                    case .tick(let deadline)?: timers.removeAll { $0 == deadline }
                    case .activityStored?: break
                    case .monitorEnded?, nil: break
                    }
                case .finish:
                    group.cancelAll()
                    return
                }
            }
        }
        // What the drain counted reaches the store when the interval has passed, or when the
        // queue closes: a drain of one entry costs no write of its own.
        if activityBook.takeTurn() { try? await activityBook.flush() }
        if let failure = machine.failure { throw failure }
        return machine.summary
    }

    /// The cap of sends under way to one origin: the configuration's, else the transport's.
    private static func sendsPerOrigin(_ configured: Int?, transport: any Transport) -> @Sendable (Substring) -> Int? {
        if let configured { return { _ in configured } }
        return { origin in transport.sendsAtOnce(toOrigin: String(origin)) }
    }

    /// One log line, one event and one count for each circuit a commit opened or closed
    /// (``OriginHealth``): the commit that recorded the answer says so, once for the fleet.
    private func circuitsChanged(_ result: ClaimResult, settlements: [Settlement]) {
        let logger = configuration.tracing.logger
        for origin in result.opened {
            // The answer that opened it: the last of the commit's failures for the origin.
            let last = settlements.last { settlement in
                settlement.url.flatMap(FlowOrigin.key(ofURL:)) == origin[...] && settlement.flowSignal.map { signal in
                    if case .success = signal { return false } else { return true }
                } ?? false
            }
            var error = "unwell"
            if case .unwell(let words, _)? = last?.flowSignal { error = words }
            if case .overload(let status)? = last?.flowSignal { error = "HTTP \(status)" }
            logger.warning("origin unwell, circuit opened: its entries wait for a probe", metadata: [
                "origin": "\(origin)", "error": "\(error)", "probe_in": "\(configuration.flow.health.probeInterval)",
            ])
            metrics.circuitOpened(origin: origin)
            circuits.opened([origin], at: configuration.clock.now().wall, error: error)
            if broadcast.hasSubscribers { broadcast.publish(.circuitOpened(origin: origin, error: error)) }
        }
        for origin in result.closed {
            logger.notice("origin answered a probe, circuit closed: its entries are due", metadata: ["origin": "\(origin)"])
            metrics.circuitClosed(origin: origin)
            circuits.closed([origin])
            if broadcast.hasSubscribers { broadcast.publish(.circuitClosed(origin: origin)) }
        }
    }

    /// Counts what a commit recorded, for entries of `sending`, which it forgets.
    private func record(_ settlements: [Settlement], lost: Set<EntryID>, sending: inout [EntryID: (name: String, createdAt: Date)]) {
        let now = configuration.clock.now().wall
        for settlement in settlements {
            guard let entry = sending.removeValue(forKey: settlement.id), !lost.contains(settlement.id) else { continue }
            metrics.recorded(settlement.transition, name: entry.name, createdAt: entry.createdAt, now: now)
        }
    }

    /// What the drain's child tasks hand back.
    enum DrainEvent: Sendable {
        case finished(AttemptReport)
        /// A commit the machine asked for ended; its settlements, for the events.
        case committed([Settlement], Result<ClaimResult, QueueError>)
        case stop
        case network(online: Bool)
        case monitorEnded
        /// The timer set for this deadline (since the drain began) went off.
        case tick(Duration)
        /// A write of the activity per minute ended (a failure keeps its counts for the next).
        case activityStored
    }

    /// Waits until `monitor` says online when `online` is false, or offline when it is true.
    private static func change(of monitor: any NetworkMonitor, from online: Bool) async -> DrainEvent {
        for await status in monitor.statusUpdates() where status.isOnline != online {
            return .network(online: status.isOnline)
        }
        return Task.isCancelled ? .stop : .monitorEnded
    }

    /// Whether `error` only says the network is gone (so nothing reached a server, and the
    /// attempt should not count). Without a monitor only "not connected" qualifies; with one,
    /// any failure to connect while the monitor does not say online does.
    static func isNetworkGone(_ error: any Error, monitor: (any NetworkMonitor)?) -> Bool {
        let error = NetworkError(error)
        switch error {
        case .offline:
            return true
        case .transport(let failure) where failure.kind == .notConnected:
            return true
        default:
            guard error.isConnectivityFailure, let monitor else { return false }
            return !monitor.status.isOnline
        }
    }
}
