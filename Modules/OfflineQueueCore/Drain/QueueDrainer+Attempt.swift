import Foundation
import HTTPCore
import HTTPTypes

/// One attempt, from a claimed entry to the lifecycle's transition, and the store's side of a
/// drain's turn: the work the drain's driver hands to its child tasks and performs.
extension QueueDrainer {
    /// Sends a claimed entry and settles how it went: the drain's child task, which hands the
    /// machine its transition (``AttemptReport``).
    ///
    /// `ahead`: the entry opened before its send started (``EntrySealing/openAhead(_:)``).
    /// `conflicts`: the queue's resolver, when it has one. `probe`: the entry goes as its
    /// origin's probe (``OriginHealth``): if the server is still unwell, the attempt does not
    /// count, and the entry waits for the next probe with no backoff of its own.
    func attemptAndSettle(
        _ entry: QueueEntry, sealing: EntrySealing, ahead: Result<OpenedEntry, QueueError>? = nil, conflicts: ConflictHandling? = nil,
        probe: Bool = false
    ) async -> AttemptReport {
        // The queue's policy, with the entry's own settings in place.
        let policy = entry.policy(under: configuration.policy)
        // The entry's age when its attempt starts, on the boot clock.
        let age = Duration.seconds(max(0, configuration.clock.now().uptime - entry.budgetUptime))
        let sent = ContinuousClock.now
        watch.sendBegan(entry.id, timeout: entry.timeout ?? client.configuration.timeout, margin: ServiceWatch.sendMargin)
        let outcome: EntryLifecycle.AttemptOutcome
        var trace: SentTrace?
        // Only an entry that keeps its response carries a box for it: the others' frames stay as they were.
        let keeping = entry.keepResponse == nil ? nil : KeptResponseBox()
        let met = conflicts == nil ? nil : ConflictBox()
        var unwell: String?
        do throws(QueueError) {
            outcome = try await attempt(
                entry, age: age, policy: policy, sealing: sealing, ahead: ahead, sentTrace: &trace, keeping: keeping, conflicts: met,
                unwell: &unwell
            )
        } catch {
            // A sealed entry that does not open stays as it was: given back unsent, nothing
            // counted, and the drain stops with the error.
            watch.sendEnded(entry.id)
            return AttemptReport(settlement: Settlement(id: entry.id, transition: .release), networkGone: false, failure: error)
        }
        watch.sendEnded(entry.id)
        switch outcome {
        case .interrupted, .invalid: break   // cut short, or never sent
        default: metrics.attempted(entry.name, duration: ContinuousClock.now - sent)
        }
        var transition: EntryLifecycle.Transition
        var replacement: Settlement.Replacement?
        if case .interrupted = outcome {
            transition = .release
        } else if let expired = EntryLifecycle.admit(age: age, policy: policy) {
            // Too old when its attempt started: `attempt` did not send it.
            transition = expired
        } else {
            // Only a backoff draws its jitter: the system generator costs a system call a draw.
            let delivered = if case .delivered = outcome { true } else { false }
            transition = EntryLifecycle.transition(
                after: outcome, attempts: entry.attempts, age: age, policy: policy, unitRandom: delivered ? 0 : Double.random(in: 0..<1)
            )
            // The app decides a conflict, when it registered a resolver.
            if case .conflict(let conflict) = transition {
                (transition, replacement) = await settle(conflict, of: entry, met: met?.met, handling: conflicts)
            }
            // A probe that found the server still unwell costs its entry nothing: the circuit
            // stays open, and the entry is due with the next probe.
            if probe, let failed = EntryLifecycle.probeFailed(outcome, unwell: unwell) { transition = failed }
        }
        logAttempt(of: entry, transition: transition, trace: trace)
        let gone = if case .networkGone = outcome { true } else { false }
        var settlement = Settlement(id: entry.id, transition: transition, replacement: replacement, url: entry.url)
        settlement.unwell = unwell
        settlement.probe = probe
        // Only an answer that fails the origin draws the jitter of its next probe.
        if case .unwell? = settlement.flowSignal { settlement.jitter = Double.random(in: 0..<1) }
        if case .overload(503)? = settlement.flowSignal { settlement.jitter = Double.random(in: 0..<1) }
        // Kept in the transaction that records the delivery, sealed as the entry is.
        if case .deliver = transition, let kept = keeping?.response { settlement.kept = sealing.keep(kept, of: entry) }
        return AttemptReport(settlement: settlement, networkGone: gone, failure: nil)
    }

    /// Whether a failure below HTTP says the server is unwell rather than the request
    /// (``OriginHealth``), and in words: a timeout, a refused connection, a reset, a TLS
    /// handshake that failed for a reason other than the certificate. `nil` for any other.
    static func unwell(_ error: NetworkError) -> String? {
        guard case .transport(let failure) = error else { return nil }
        switch failure.kind {
        case .timedOut: return "timed out"
        case .cannotConnect: return "connection refused"
        case .connectionLost: return "connection reset"
        case .tls where !failure.message.localizedCaseInsensitiveContains("certificate"): return "TLS handshake failed"
        default: return nil
        }
    }

    /// Where an attempt of an entry that keeps its response puts it: a box only such an entry
    /// carries. Written by the attempt's one task, read by it after the send.
    final class KeptResponseBox: @unchecked Sendable {
        var response: KeptResponse?
    }

    /// What became of one claimed entry's attempt.
    struct AttemptReport: Sendable {
        var settlement: Settlement
        /// The send found the network gone.
        var networkGone: Bool
        /// The entry could not be opened (``QueueError/Kind/sealBroken``, ``QueueError/Kind/keyUnavailable``):
        /// it was not sent, and the drain stops.
        var failure: QueueError?
    }

    /// Sends one claimed entry through the client (its plugins run again) and says how it went.
    /// A sealed entry is opened first, its body verified in full; it throws only when the entry
    /// cannot be opened, and then nothing was sent. `sentTrace`: the trace context the request
    /// went out with, for the attempt's log line (set only when that line is logged). `keeping`:
    /// where the response goes, for an entry that keeps it (``QueueEntry/keepResponse``).
    /// `conflicts`: where an answer `policy` calls a conflict goes, with the request, for the
    /// queue's resolver. `unwell`: set, in words, when the send failed below HTTP in a way that
    /// says the server is unwell (``unwell(_:)``).
    func attempt(
        _ entry: QueueEntry, age: Duration, policy: DeliveryPolicy, sealing: EntrySealing, ahead: Result<OpenedEntry, QueueError>? = nil,
        sentTrace: inout SentTrace?, keeping: KeptResponseBox? = nil, conflicts: ConflictBox? = nil, unwell: inout String?
    ) async throws(QueueError) -> EntryLifecycle.AttemptOutcome {
        if Task.isCancelled { return .interrupted }
        // An entry too old at its claim is not sent; `settlements` turns it into an expiry.
        if EntryLifecycle.admit(age: age, policy: policy) != nil {
            return .invalid(message: "expired")
        }
        let stored: RequestBody?
        do {
            stored = try entry.body.map { body throws(QueueError) in try store.replayBody(body) }
        } catch {
            // A body file that is gone, or a row naming a file Courier never writes.
            return .invalid(message: "\(error)")
        }
        // `hold`: the verified plaintext of a sealed body, counted until the send is over.
        let (opened, body, hold) = try await sealing.open(entry, stored: stored, memory: verifiedBodyMemory, ahead: ahead)
        defer { withExtendedLifetime(hold) {} }
        // A child that takes values from its parents' responses gets them now, or dies naming
        // the one that does not resolve.
        var request = opened
        var requestBody = body
        if !entry.responseSources.isEmpty, let ended = try await takeValues(into: &request, body: &requestBody, sealing: sealing) {
            return ended
        }
        // With no tracer, the stored context goes out as it is; a tracer sends its span's.
        let tracer = configuration.tracing.activeTracer
        let sendsStored = tracer == nil && configuration.tracing.delivery == .continued
        let replay: ReplayRequest
        do {
            replay = try ReplayRequest(entry: request, body: requestBody, drain: self, trace: sendsStored ? entry.traceContext : nil)
        } catch {
            // A template not allowed for the entry's origin lands here: nothing is sent.
            return .invalid(message: "\(error)")
        }
        do {
            let scopes = Set(entry.scopes.map { PluginScope($0) })
            let response: Response<Void>
            if let tracer {
                response = try await send(replay.request, for: entry, scopes: scopes, tracer: tracer, sentTrace: &sentTrace, keeping: keeping)
            } else {
                if sendsStored, let stored = entry.traceContext, logsAttempts { sentTrace = SentTrace(traceID: stored.traceID, spanID: nil) }
                if let keeping {
                    response = try await send(replay.request, for: entry, scopes: scopes, keepingInto: keeping)
                } else {
                    response = try await client.send(replay.request, name: entry.name, scopes: scopes)
                }
            }
            return .delivered(status: response.status.code)
        } catch .cancelled where !Task.isCancelled {
            // Nobody cancelled the drain: a plugin or transport gave up by itself. Counted and
            // backed off like any failure, so it cannot turn into a loop of instant retries.
            return .failed(message: "cancelled, though the drain was not", retryable: true)
        } catch {
            let outcome = classify(error, secrets: replay.secrets)
            if case .failed = outcome { unwell = Self.unwell(error) }
            if let conflicts, case .rejected(let status, let retryAfter, _) = outcome, let response = error.response,
               !StatusRules.waits(status: status, retryAfter: retryAfter), policy.statuses.meaning(of: status) == .conflict {
                conflicts.met = Self.conflicted(request, body: requestBody, of: entry, response: response)
            }
            return outcome
        }
    }

    /// Sends `request` for `entry`, which keeps its response (``QueueEntry/keepResponse``),
    /// through the client, and puts what it keeps into `box` (the body's rest is read and dropped).
    func send(
        _ request: PreparedRequest, for entry: QueueEntry, scopes: Set<PluginScope>, keepingInto box: KeptResponseBox
    ) async throws(NetworkError) -> Response<Void> {
        let keeping = entry.keepResponse ?? ResponseKeeping()
        let response = try await client.send(request, name: entry.name, scopes: scopes, keepingUpTo: keeping.bodyLimit)
        var headers: [StoredHeader] = []
        for field in response.headers where keeping.headers.contains(field.name.canonicalName) {
            headers.append(StoredHeader(name: field.name.canonicalName, value: field.value))
        }
        box.response = KeptResponse(status: response.status.code, headers: headers, body: response.body.body, truncated: response.body.truncated)
        return response.map { _ in () }
    }

    /// A failed send in the lifecycle's terms. `secrets` are values the request carried
    /// (resolved templates, credential fields) that must not come to rest in the row: a server
    /// that echoes request headers into its error body would otherwise store them.
    func classify(_ error: NetworkError, secrets: SecretScrubber = SecretScrubber()) -> EntryLifecycle.AttemptOutcome {
        if case .cancelled = error { return .interrupted }
        if Self.isNetworkGone(error, monitor: monitor) { return .networkGone(message: secrets.scrub(error.description)) }
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

    /// Performs a commit of the drain: the store's `settleAndClaim`, or, after a full disk,
    /// its `settleOnFullDisk`. Either still runs when the drain's task is cancelled (GRDB
    /// refuses work from a cancelled task), so interrupted entries are always given back and
    /// what was sent is recorded.
    func perform(_ commit: DrainMachine.Commit, now: QueueTime, attemptedSince: Double?) async throws(QueueError) -> ClaimResult {
        let store = self.store
        let claims = !Task.isCancelled && !commit.onFullDisk
        let call = watch.storeCallBegan(claims ? .claim : .settle)
        defer { watch.storeCallEnded(call) }
        if claims {
            return try await store.settleAndClaim(
                commit.settlements, now: now, claimLimit: commit.claimLimit,
                lease: configuration.policy.leaseDuration, attemptedSince: attemptedSince, chores: commit.chores
            )
        }
        // Claims nothing: a cancelled drain is stopping, and a full disk stopped it.
        let settlements = commit.settlements
        let onFullDisk = commit.onFullDisk
        let result = await Task { () async -> Result<Set<EntryID>, QueueError> in
            do throws(QueueError) {
                return .success(onFullDisk ? try await store.settleOnFullDisk(settlements, now: now) : try await store.settle(settlements, now: now))
            } catch {
                return .failure(error)
            }
        }.value
        return ClaimResult(lost: try result.get())
    }

    /// Tells subscribers what a commit recorded (the machine counts it).
    func announce(_ settlements: [Settlement], lost: Set<EntryID>) {
        guard broadcast.hasSubscribers else { return }
        for settlement in settlements {
            let id = settlement.id
            if lost.contains(id) {
                broadcast.publish(.leaseLost(id: id))
                continue
            }
            switch settlement.transition {
            case .deliver(let status):
                broadcast.publish(.delivered(id: id, status: status))
            case .retry(let retry):
                if retry.waitingForNetwork {
                    broadcast.publish(.waitingForNetwork(id: id))
                } else {
                    let at = configuration.clock.now().wall.addingTimeInterval(retry.after.seconds)
                    broadcast.publish(.willRetry(id: id, at: at, error: retry.error))
                }
            case .deadLetter(let dead):
                broadcast.publish(.deadLettered(id: id, reason: dead.reason, error: dead.error))
            case .release:
                broadcast.publish(.released(id: id))
            case .conflict(let conflict):
                broadcast.publish(.conflicted(id: id, status: conflict.status))
            case .drop(let conflict):
                broadcast.publish(.dropped(id: id, status: conflict.status))
            }
        }
    }
}
