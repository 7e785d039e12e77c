public import Foundation
import HTTPCore
import HTTPTypes
import Reachability

/// How long a drain goes on.
public enum DrainMode: Sendable, Hashable {
    /// Until nothing is due: entries that fail and come due again during the drain are sent
    /// again. Entries backing off past that point stay pending.
    case untilIdle
    /// Each entry due when the drain starts is tried at most once.
    case once
}

/// What one drain did.
public struct DrainSummary: Sendable, Hashable, Codable {
    /// Entries the server accepted.
    public var delivered = 0
    /// Attempts that failed and were scheduled again.
    public var failed = 0
    /// Entries that went to dead letters.
    public var dead = 0
    /// Attempts that found the network gone (not counted against budgets).
    public var waitingForNetwork = 0
    /// Attempts interrupted by a stop and given back.
    public var released = 0
    /// Attempts whose lease lapsed before they ended.
    public var leasesLost = 0
    /// Entries taken back from drainers that had died holding them.
    public var reclaimed = 0
    /// Entries still pending when the drain ended (in this file, from every process).
    public var remaining = 0
    /// Entries in flight under other drainers that live, when the drain ended.
    public var inflightElsewhere = 0
    /// Those drainers (`host:pid:token:boot`).
    public var otherDrainers: [String] = []
    /// When the next of them is due.
    public var nextAttemptAt: Date?
    /// Whether the drain stopped, or did not start, because the network is gone.
    public var offline = false

    public init() {}
}

/// Lets a caller stop a drain gracefully: no new claims, in-flight sends run to their end.
public final class DrainControl: Sendable {
    private let stopped = LockedBox(false)
    let wake = WakeSignal()

    public init() {}

    /// Stops claiming new entries; sends under way finish (cancel the drain's task to cut
    /// them short: their leases are then given back).
    public func stop() {
        stopped.withLock { $0 = true }
        wake.fire()
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopped.current }
}

extension OfflineQueue {
    /// Sends due entries, up to ``QueueConfiguration/concurrency`` at once and one per group,
    /// until nothing is due (or once each, with `.once`), and returns what happened.
    ///
    /// Does nothing when the monitor says the network is gone, and stops claiming when a send
    /// finds it gone. When the network is there (or there is no monitor), entries that waited
    /// for it are due at once. Cancelling the calling task interrupts sends in flight and gives their
    /// entries back (pending, nothing counted).
    public func drain(_ mode: DrainMode = .untilIdle, concurrency: Int? = nil, control: DrainControl? = nil) async throws(QueueError) -> DrainSummary {
        let limit = max(1, concurrency ?? configuration.concurrency)
        let control = control ?? DrainControl()
        let clock = configuration.clock
        let started = clock.now()
        let lease = configuration.policy.leaseDuration
        try ownerLock.acquire()
        let finished = LockedBox<[Finished]>([])
        var summary = DrainSummary()
        var failure: QueueError?
        if monitor?.status.isOnline ?? true {
            // The network is there now: entries that found it gone are due again.
            try await store.wakeNetworkWaiters(now: started)
        }

        await withDiscardingTaskGroup { group in
            // Claimed entries not started yet: claims fetch up to twice the concurrency, so a
            // claim (a write transaction) serves many sends.
            var ready: [QueueEntry] = []
            var running = 0
            var networkGone = false
            // Finished attempts not yet recorded: written together, with the next claim, once
            // `limit` of them wait, after `flushDelay`, or at the end.
            var unsettled: [QueueStore.Settlement] = []
            var oldestUnsettled: ContinuousClock.Instant?
            // Whether the last claim found everything that was due; then the next claim waits
            // until nothing is left to start.
            var exhausted = false
            // When each claimed entry (ready or in flight) was claimed or last renewed, to renew
            // its lease at half its duration.
            var leasedAt: [EntryID: ContinuousClock.Instant] = [:]
            let renewal = lease / 2
            // Chores of the claim: carry rows over from another boot at the first claim; take
            // entries back from dead drainers then and at most once a second after.
            var chores = QueueStore.ClaimChores(carryOver: true, reclaimOrphans: true, maxDelay: configuration.policy.longestDelay)
            var lastReclaim = ContinuousClock.now
            // One ticker wakes the loop every `flushDelay`, so a finished attempt is recorded in
            // time even while other sends hang (a timer per wait would cost more than a send).
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.flushDelay)
                    control.wake.fire()
                }
            }
            defer { group.cancelAll() }
            while true {
                let batch = finished.withLock { batch in
                    defer { batch.removeAll(keepingCapacity: true) }
                    return batch
                }
                running -= batch.count
                for item in batch { leasedAt[item.entry.id] = nil }
                if batch.contains(where: { if case .networkGone = $0.outcome { true } else { false } }) { networkGone = true }
                let now = clock.now()
                if !batch.isEmpty {
                    unsettled += settlements(for: batch, now: now)
                    oldestUnsettled = oldestUnsettled ?? .now
                }
                let online = monitor?.status.isOnline ?? true
                if !online || networkGone { summary.offline = true }
                let stopping = control.isStopped || Task.isCancelled || failure != nil || !online || networkGone
                if stopping && !ready.isEmpty {
                    // Claimed but never sent: give them back.
                    unsettled += ready.map { QueueStore.Settlement(id: $0.id, transition: .release) }
                    for entry in ready { leasedAt[entry.id] = nil }
                    ready.removeAll()
                    oldestUnsettled = oldestUnsettled ?? .now
                }

                var claimLimit = 0
                if !stopping && running + ready.count <= limit && (!exhausted || running + ready.count == 0) {
                    claimLimit = 2 * limit - running - ready.count
                }
                let idle = running == 0 && ready.isEmpty
                let flushDue = unsettled.count >= limit || idle || stopping
                    || oldestUnsettled.map { .now - $0 >= Self.flushDelay } ?? false
                if claimLimit > 0, ContinuousClock.now - lastReclaim >= .seconds(1) {
                    chores.reclaimOrphans = true
                }
                if claimLimit > 0 || (flushDue && !unsettled.isEmpty) {
                    do throws(QueueError) {
                        let result = try await settleAndClaim(
                            unsettled, now: now, claimLimit: claimLimit,
                            attemptedSince: mode == .once ? started.uptime : nil, chores: claimLimit > 0 ? chores : .init()
                        )
                        let (lost, fresh) = (result.lost, result.claimed)
                        summary.reclaimed += result.reclaimed
                        if claimLimit > 0 {
                            if chores.reclaimOrphans { lastReclaim = ContinuousClock.now }
                            chores.carryOver = false
                            chores.reclaimOrphans = false
                        }
                        publish(unsettled, lost: lost, into: &summary)
                        unsettled.removeAll(keepingCapacity: true)
                        oldestUnsettled = nil
                        if claimLimit > 0 {
                            exhausted = fresh.count < claimLimit
                            ready += fresh
                            let claimed = ContinuousClock.now
                            for entry in fresh { leasedAt[entry.id] = claimed }
                        }
                    } catch {
                        failure = failure ?? error
                    }
                }
                if configuration.policy.renewsLeases, !leasedAt.isEmpty, failure == nil {
                    let instant = ContinuousClock.now
                    let due = leasedAt.filter { instant - $0.value >= renewal }.map(\.key)
                    if !due.isEmpty {
                        do throws(QueueError) {
                            try await store.renewLeases(due, owner: owner, now: clock.now(), lease: lease)
                            for id in due { leasedAt[id] = instant }
                        } catch {
                            failure = failure ?? error
                        }
                    }
                }
                while running < limit, !ready.isEmpty, !stopping {
                    let entry = ready.removeFirst()
                    running += 1
                    if broadcast.hasSubscribers {
                        broadcast.publish(.attemptStarted(id: entry.id, attempt: entry.attempts + 1))
                    }
                    group.addTask {
                        let age = Duration.seconds(max(0, clock.now().uptime - entry.budgetUptime))
                        let outcome = await self.attempt(entry, age: age)
                        finished.withLock { $0.append(Finished(entry: entry, age: age, outcome: outcome)) }
                        control.wake.fire()
                    }
                }
                if running == 0 && ready.isEmpty && (unsettled.isEmpty || failure != nil) && (claimLimit == 0 || exhausted) {
                    if claimLimit > 0 || stopping || failure != nil { break }
                    continue   // one more claim: retries may have come due meanwhile
                }
                if running > 0 && finished.withLock({ $0.isEmpty }) {
                    await control.wake.wait()
                }
            }
        }
        if let failure { throw failure }
        let counts = try await store.counts(now: clock.now())
        summary.remaining = counts.pending
        summary.nextAttemptAt = counts.nextAttemptAt
        summary.inflightElsewhere = counts.inflight - counts.inflightOrphaned
        summary.otherDrainers = counts.drainers.filter { $0 != owner }
        return summary
    }

    /// How long a finished attempt may wait before it is recorded, when fewer than the
    /// concurrency limit wait with it.
    static let flushDelay: Duration = .milliseconds(50)

    /// One attempt's entry and outcome, waiting to be recorded.
    struct Finished: Sendable {
        var entry: QueueEntry
        /// The entry's age when its attempt started, on the boot clock.
        var age: Duration
        var outcome: AttemptOutcome
    }

    /// The lifecycle's transitions for finished attempts.
    private func settlements(for batch: [Finished], now: QueueTime) -> [QueueStore.Settlement] {
        let policy = configuration.policy
        return batch.map { item in
            let transition: Transition
            if case .interrupted = item.outcome {
                transition = .release
            } else if let expired = EntryLifecycle.admit(age: item.age, policy: policy) {
                // Too old when its attempt started: `attempt` did not send it.
                transition = expired
            } else {
                transition = EntryLifecycle.transition(
                    after: item.outcome, attempts: item.entry.attempts, age: item.age,
                    policy: policy, unitRandom: Double.random(in: 0..<1)
                )
            }
            return QueueStore.Settlement(id: item.entry.id, transition: transition)
        }
    }

    /// The store's `settleAndClaim`, which still runs when the drain's task is cancelled (GRDB
    /// refuses work from a cancelled task), so interrupted entries are always given back.
    private func settleAndClaim(
        _ settlements: [QueueStore.Settlement], now: QueueTime, claimLimit: Int, attemptedSince: Double?, chores: QueueStore.ClaimChores
    ) async throws(QueueError) -> QueueStore.ClaimResult {
        guard Task.isCancelled else {
            return try await store.settleAndClaim(
                settlements, owner: owner, now: now, claimLimit: claimLimit,
                lease: configuration.policy.leaseDuration, attemptedSince: attemptedSince, chores: chores
            )
        }
        let store = self.store, owner = self.owner
        let result = await Task { () async -> Result<Set<EntryID>, QueueError> in
            do throws(QueueError) {
                return .success(try await store.settle(settlements, owner: owner, now: now))
            } catch {
                return .failure(error)
            }
        }.value
        return QueueStore.ClaimResult(lost: try result.get())
    }

    /// Counts what was recorded and tells subscribers.
    private func publish(_ settlements: [QueueStore.Settlement], lost: Set<EntryID>, into summary: inout DrainSummary) {
        let publish = broadcast.hasSubscribers
        for settlement in settlements {
            let id = settlement.id
            if lost.contains(id) {
                summary.leasesLost += 1
                if publish { broadcast.publish(.leaseLost(id: id)) }
                continue
            }
            switch settlement.transition {
            case .deliver(let status):
                summary.delivered += 1
                if publish { broadcast.publish(.delivered(id: id, status: status)) }
            case .retry(let delay, _, let waiting, _, let error, _):
                let at = configuration.clock.now().wall.addingTimeInterval(delay.seconds)
                if waiting {
                    summary.waitingForNetwork += 1
                    if publish { broadcast.publish(.waitingForNetwork(id: id)) }
                } else {
                    summary.failed += 1
                    if publish { broadcast.publish(.willRetry(id: id, at: at, error: error)) }
                }
            case .deadLetter(let reason, _, let error, _):
                summary.dead += 1
                if publish { broadcast.publish(.deadLettered(id: id, reason: reason, error: error)) }
            case .release:
                summary.released += 1
                if publish { broadcast.publish(.released(id: id)) }
            }
        }
    }

    /// Sends one claimed entry through the client (its plugins run again) and says how it went.
    func attempt(_ entry: QueueEntry, age: Duration) async -> AttemptOutcome {
        if Task.isCancelled { return .interrupted }
        // An entry too old at its claim is not sent; `settlements` turns it into an expiry.
        if EntryLifecycle.admit(age: age, policy: configuration.policy) != nil {
            return .invalid(message: "expired")
        }
        let endpoint: ReplayEndpoint
        do {
            endpoint = try ReplayEndpoint(entry: entry, queue: self)
        } catch {
            // A template not allowed for the entry's origin lands here: nothing is sent.
            return .invalid(message: "\(error)")
        }
        do {
            let response = try await client.send(endpoint)
            return .delivered(status: response.status.code)
        } catch .cancelled where !Task.isCancelled {
            // Nobody cancelled the drain: a plugin or transport gave up by itself. Counted and
            // backed off like any failure, so it cannot turn into a loop of instant retries.
            return .failed(message: "cancelled, though the drain was not", retryable: true)
        } catch {
            return classify(error, secrets: endpoint.secrets)
        }
    }

    /// A failed send in the lifecycle's terms. `secrets` are values the request carried
    /// (resolved templates, credential fields) that must not come to rest in the row: a server
    /// that echoes request headers into its error body would otherwise store them.
    func classify(_ error: NetworkError, secrets: SecretScrubber = SecretScrubber()) -> AttemptOutcome {
        if case .cancelled = error { return .interrupted }
        if isNetworkGone(error) { return .networkGone(message: secrets.scrub(error.description)) }
        if let response = error.response {
            let retryAfter = response.headers[.retryAfter].flatMap { RetryAfter.delay(from: $0, now: configuration.clock.now().wall) }
            // What went on the wire, plugin-added credentials included.
            var scrubber = secrets
            for field in response.request.headerFields where configuration.secretHeaders.contains(field.name) { scrubber.add(field.value) }
            let excerpt = response.body.isEmpty ? nil : scrubber.scrub(String(decoding: response.body.prefix(configuration.policy.excerptLimit), as: UTF8.self))
            return .rejected(status: response.status.code, retryAfter: retryAfter, excerpt: excerpt)
        }
        switch error {
        case .invalidRequest, .encoding:
            return .invalid(message: error.description)
        case .underlying:
            // A plugin or interceptor failed (a token refresh, say): worth another try.
            return .failed(message: error.description, retryable: true)
        case .transport(let failure):
            // A garbled or cut-off answer may be a passing fault of a proxy or a restarting
            // server: retried within the budget. A TLS failure needs a person: dead at once.
            return .failed(message: error.description, retryable: failure.kind != .tls)
        default:
            return .failed(message: error.description, retryable: error.isRetryable)
        }
    }
}

/// A stored entry as an endpoint, so the client sends it with its plugins, interceptors,
/// redirects and validation.
struct ReplayEndpoint: Endpoint {
    let path: String
    let method: HTTPRequest.Method
    let headers: HTTPFields
    let body: RequestContent
    let timeout: Duration?
    let scopes: Set<PluginScope>
    let name: String
    /// The values of resolved templates and credential fields, kept out of stored excerpts.
    let secrets: SecretScrubber

    init(entry: QueueEntry, queue: OfflineQueue) throws {
        guard let method = HTTPRequest.Method(entry.method) else { throw QueueError.invalidRequest("stored method \(entry.method) is invalid") }
        let origin = URL(string: entry.url).flatMap(Origin.init)
        var headers = HTTPFields()
        var credentials: Set<HTTPField.Name> = []
        var secrets = SecretScrubber()
        for header in entry.headers {
            guard let name = HTTPField.Name(header.name) else { throw QueueError.invalidRequest("stored header \(header.name) is invalid") }
            let value = try queue.configuration.templates.resolve(header.value, for: origin)
            if value != header.value || queue.configuration.secretHeaders.contains(name) {
                // A resolved template is a credential wherever it sits: dropped when a redirect
                // leaves the origin, and never stored in an excerpt.
                credentials.insert(name)
                secrets.add(value)
            }
            headers.append(HTTPField(name: name, value: value))
        }
        self.secrets = secrets
        headers[queue.configuration.idempotencyHeader] = entry.idempotencyKey
        var requestBody: RequestBody?
        switch entry.body {
        case .inline(let data): requestBody = .data(data)
        case .file(let name, _): requestBody = try RequestBody.file(queue.store.bodies.url(for: name))
        case nil: requestBody = nil
        }
        let body = requestBody
        let credentialFields = credentials
        self.path = entry.url
        self.method = method
        self.headers = headers
        self.body = RequestContent { draft, _ in
            draft.body = body
            draft.credentialFields.formUnion(credentialFields)
        }
        self.timeout = entry.timeout
        self.scopes = Set(entry.scopes.map { PluginScope($0) })
        self.name = entry.name
    }
}
