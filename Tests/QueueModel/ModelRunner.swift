import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import OfflineQueueCore
import OfflineQueuePostgres
import PostgresNIO
import QueueTestSupport

/// Where a store and the model parted: the step, and what differed.
struct Divergence: Error, CustomStringConvertible {
    var step: Int
    var what: String

    var description: String { "step \(step + 1): \(what)" }
}

/// Runs a ``ModelProgram`` on a real store and on ``QueueModel`` side by side, step by step:
/// each step's answers are compared, then the store's whole observable state (every entry, the
/// counts, the pauses, the origins' flow), and the invariants are checked. The store is driven
/// through the storage contract, as the engine drives it, on a clock the runner plays: time
/// passes, the wall clock steps, the machine reboots.
final class ModelRunner {
    let kind: StoreKind
    let place: TestStore
    private(set) var model: QueueModel

    // The clock: the boot clock's reading (`uptime`, which each boot restarts), the wall clock
    // (which a program may step), and the boot. The model reads the same numbers the store
    // compares: the boot clock's on SQLite and in memory, the fleet's on PostgreSQL (its
    // anchor plus the boot clock's progress, computed as FleetClock computes it), so the
    // instant a lease ends or an entry falls due rounds the same way on both sides.
    private var uptime: Double = ModelRunner.uptimeBase
    private var wall: Double
    private var boot = 0
    /// The fleet's time at this boot's start (PostgreSQL), and the boot clock's reading then.
    private var anchor: (server: Double, uptime: Double) = (0, ModelRunner.uptimeBase)
    private let bootName = "model-" + UUID().uuidString.prefix(8).lowercased()
    private let time: LockedBox<QueueTime>
    private static let uptimeBase = 1000.0

    private struct Session {
        var number: Int
        var queue: OfflineQueue
        var started = false
        /// What this drainer believes it holds: what it claimed and has not settled yet.
        var believed: [Int] = []
        /// Of those, what it claimed as an origin's probe.
        var probes: Set<Int> = []
        var store: any QueueStorage { queue.store }
    }

    private var sessions: [Int: Session] = [:]
    private var owners: [String: Int] = [:]
    private var nextSession = 0
    private var storeIDs: [Int: EntryID] = [:]
    private var modelIDs: [EntryID: Int] = [:]
    /// Counted by the check: steps run, and per kind.
    private(set) var stepsRun = 0

    /// The queue's policy, as a drain reads it for each entry's lifecycle.
    static let policy = DeliveryPolicy(
        backoff: Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(60)), maxAttempts: 4, maxAge: .seconds(3600),
        maxRetryAfter: .seconds(600), networkRecheck: .seconds(30), leaseDuration: .seconds(30)
    )
    static let flow = FlowSettings(maxPause: 600, growAfter: 2, ceiling: 4, openAfter: 3, probeInterval: 1, maxProbeInterval: 8)

    init(kind: StoreKind) async throws {
        self.kind = kind
        place = try TestStore(kind, database: kind == .postgres ? try await Self.modelDatabase() : nil)
        model = QueueModel(flavour: QueueModel.Flavour(rawValue: kind.rawValue)!)
        // A reading of the epoch as a clock gives one, with its fraction: fleet times then subtract
        // with the rounding errors of real ones (a token due exactly at a claim's time reads 0.9999998).
        wall = Date().timeIntervalSince1970
        time = LockedBox(QueueTime(wall: Date(timeIntervalSince1970: wall), boot: "", uptime: Self.uptimeBase))
        startBoot(fleet: wall)
    }

    /// The cluster's database for the model check: commits there do not wait for the disk
    /// (`synchronous_commit = off`), which changes nothing a program can see but a crash of the
    /// server, and makes the PostgreSQL check several times faster.
    static func modelDatabase() async throws -> String {
        let name = "courier_model"
        guard let url = TestStore.postgresURL else { throw TestStoreError.noCluster }
        try await withPostgres(url) { connection in
            let exists = try await connection.query("SELECT 1 FROM pg_database WHERE datname = 'courier_model'", logger: testLogger).collect()
            if exists.isEmpty {
                // Two checks may race to make it: the loser's error is that it exists.
                _ = try? await connection.query("CREATE DATABASE courier_model", logger: testLogger)
                try await connection.query("ALTER DATABASE courier_model SET synchronous_commit = off", logger: testLogger)
            }
        }
        return name
    }

    /// What the program reached of PostgreSQL's PL/pgSQL, read before its schema is dropped.
    private(set) var coverage = PLpgSQLCoverage()

    func remove() async {
        for slot in sessions.keys.sorted() { await kill(slot) }
        await observer?.close()
        if let schema = place.schema {
            coverage = (try? await withPostgres(place.path) { connection in await PLpgSQLCoverage.read(schema: schema, on: connection) })
                ?? PLpgSQLCoverage()
        }
        await place.remove()
    }

    // MARK: - Time

    private var now: QueueTime {
        QueueTime(wall: Date(timeIntervalSince1970: wall), boot: "\(bootName)-\(boot)", uptime: uptime)
    }

    /// The model's time: the number the store compares at `now`.
    private var t: Double { modelTime(uptime) }

    private func modelTime(_ uptime: Double) -> Double {
        kind == .postgres ? anchor.server + (uptime - anchor.uptime) : uptime
    }

    private var clock: QueueModel.Clock { QueueModel.Clock(t: t, wall: wall, boot: boot) }

    private func tick() { time.withLock { $0 = now } }

    /// A boot begins, its boot clock at the base: on PostgreSQL the fleet's clock is anchored at
    /// `fleet`, as the server's clock read at that boot would be.
    private func startBoot(fleet: Double) {
        uptime = Self.uptimeBase
        anchor = (fleet, uptime)
        tick()
        if kind == .postgres { PostgresFleetClock.anchor(server: fleet, at: now) }
    }

    /// The boot-clock reading of the model's time `t` (in this boot).
    private func uptime(_ t: Double) -> Double { kind == .postgres ? t - anchor.server + anchor.uptime : t }

    // MARK: - Drainers

    private func session(_ slot: Int) async throws -> Session {
        if let session = sessions[slot] { return session }
        let opening = ContinuousClock.now
        let queue = try await open()
        _ = try await queue.store.prepareDrain(DrainPreparation(), now: now)
        timings["opening drainers (within their steps)", default: 0] += (ContinuousClock.now - opening).seconds
        nextSession += 1
        let session = Session(number: nextSession, queue: queue)
        sessions[slot] = session
        owners[queue.store.owner] = nextSession
        model.open(nextSession)
        return session
    }

    /// The drainer of `slot` dies holding what it holds (its hold is let go, as its process's end would).
    private func kill(_ slot: Int) async {
        guard let session = sessions.removeValue(forKey: slot) else { return }
        let owner = session.store.owner
        await session.queue.close()
        model.kill(session.number)
        // PostgreSQL lets go of a connection's advisory lock once its backend ends, a moment
        // after the client closed it: wait until no live drainer holds an entry under it.
        if kind == .postgres {
            for _ in 0..<500 {
                let counts = try? await anyStore().counts(now: now)
                if !(counts?.drainers.contains(owner) ?? false) { break }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// The operator's and reader's store: a queue of its own that never claims (so holds
    /// nothing, and lives through every drainer's death).
    private var observer: OfflineQueue?

    private func anyStore() async throws -> any QueueStorage {
        if let observer { return observer.store }
        let queue = try await open()
        observer = queue
        return queue.store
    }

    private func open() async throws -> OfflineQueue {
        var configuration = QueueConfiguration(path: place.path, durability: .normal, policy: Self.policy, concurrency: 4)
        let box = time
        configuration.clock = QueueClock(now: { box.current })
        configuration.metrics.isEnabled = false
        let client = APIClient(baseURL: URL(string: "https://a.test")!, transport: StubTransport())
        return try await place.open(configuration, client: client)
    }

    // MARK: - Ids

    private func storeID(_ id: Int) -> EntryID { storeIDs[id] ?? EntryID(id) }
    private func modelID(_ id: EntryID) -> Int { modelIDs[id] ?? Int(id) }

    private func record(model id: Int, store sid: EntryID, step: Int) throws {
        if let known = storeIDs[id], known != sid { throw Divergence(step: step, what: "model entry \(id) is store entry \(known) and \(sid)") }
        if let known = modelIDs[sid], known != id { throw Divergence(step: step, what: "store entry \(sid) is model entry \(known) and \(id)") }
        storeIDs[id] = sid
        modelIDs[sid] = id
    }

    /// The model id of `key`'s entry, or one no entry has.
    private func id(_ key: String) -> Int { model.byKey[key] ?? 800_000 }

    // MARK: - Steps

    /// Seconds spent by kind of step, and comparing (`COURIER_MODEL_PROFILE=1` prints them).
    private(set) var timings: [String: Double] = [:]
    /// What the steps reached: settlements by transition, lost settlements, claims, refusals.
    private(set) var reached: [String: Int] = [:]

    func run(_ step: ModelProgram.Step, index: Int) async throws {
        stepsRun += 1
        let started = ContinuousClock.now
        defer { timings["compare", default: 0] += (ContinuousClock.now - started).seconds }
        try await perform(step, index: index)
        timings["compare", default: 0] -= (ContinuousClock.now - started).seconds
        timings[String(describing: step).prefix { $0 != " " }.description, default: 0] += (ContinuousClock.now - started).seconds
        try await compare(step: index)
    }

    private func perform(_ step: ModelProgram.Step, index: Int) async throws {
        switch step {
        case .enqueue(let specs): try await enqueue(specs, step: index)
        case .drain(let drain): try await self.drain(drain, step: index)
        case .settle(let slot, let outcomes): try await settle(slot: slot, outcomes: outcomes, step: index)
        case .renew(let slot, let lease):
            let session = try await session(slot)
            let held = session.believed
            try await session.store.renewLeases(held.map(storeID), now: now, lease: .seconds(lease))
            model.renewLeases(held, session: session.number, now: clock, lease: Double(lease))
        case .wakeNetwork:
            let woken = try await anyStore().wakeNetworkWaiters(now: now)
            let expected = model.wakeNetworkWaiters(now: clock)
            try expect(woken == expected, step: index, "network waiters woken: store \(woken), model \(expected)")
        case .limits(let specs):
            let limits = specs.compactMap { try? FlowControl.OriginLimit($0.origin, requestsPerSecond: $0.rate, burst: $0.burst, concurrency: $0.concurrency, openAfter: $0.openAfter) }
            try await anyStore().storeOriginLimits(limits, now: now)
            model.storeOriginLimits(limits, now: clock)
        case .retry(let keys):
            let ids = keys.map { $0.map(id) }
            let store = try await anyStore()
            try await both(step: index, store: { () async throws(QueueError) in try await store.retry(ids: ids.map { $0.map(self.storeID) }, now: self.now).map(self.modelID) },
                           model: { () throws(QueueError) in try self.model.retry(ids, now: self.clock) })
        case .purge(let keys):
            let ids = keys.map(id)
            let store = try await anyStore()
            try await both(step: index, store: { () async throws(QueueError) in try await store.purge(.ids(ids.map(self.storeID)), now: self.now) },
                           model: { () throws(QueueError) in try self.model.purge(ids: ids, now: self.clock) })
        case .purgeStates(let states):
            let purged = try await anyStore().purge(.states(Set(states), finishedBefore: nil), now: now)
            let expected = model.purge(states: Set(states), before: nil, now: clock)
            try expect(purged == expected, step: index, "purged by state: store \(purged), model \(expected)")
        case .bulk(let retry, let selection, let dryRun):
            try await bulk(retry ? .retry : .purge, selection, dryRun: dryRun, step: index)
        case .pause(let group):
            let paused = try await anyStore().pause(group: group, now: now)
            try expect(paused == model.pause(group: group), step: index, "pause answered \(paused)")
        case .resume(let group):
            let resumed = try await anyStore().resume(group: group, now: now)
            try expect(resumed == model.resume(group: group), step: index, "resume answered \(resumed)")
        case .resumeOrigin(let origin):
            let resumed = try await anyStore().resume(origin: ModelProgram.origins[origin], now: now)
            try expect(resumed == model.resume(origin: ModelProgram.origins[origin], now: clock), step: index, "resume origin answered \(resumed)")
        case .release(let keys):
            let ids = keys.map(id)
            let store = try await anyStore()
            try await both(step: index, store: { () async throws(QueueError) in try await store.release(ids.map(self.storeID), now: self.now).map(self.modelID) },
                           model: { () throws(QueueError) in try self.model.release(ids, now: self.clock) })
        case .retention(let keep):
            let cutoff = wall - Double(keep)
            let deleted = try await anyStore().deleteDelivered(finishedBefore: Date(timeIntervalSince1970: cutoff)).deletedEntries
            let expected = model.deleteDelivered(before: cutoff)
            try expect(deleted == expected, step: index, "retention deleted: store \(deleted), model \(expected)")
        case .advance(let seconds):
            uptime += seconds
            wall += seconds
            tick()
        case .stepWall(let seconds):
            wall += Double(seconds)
            tick()
        case .reboot(let gap):
            for slot in sessions.keys.sorted() { await kill(slot) }
            model.reboot()
            let fleet = t + Double(gap)
            wall += Double(gap)
            boot += 1
            startBoot(fleet: fleet)
            // A service starts at boot: its first commit carries the rows over.
            try await drain(ModelProgram.Drain(slot: 0, outcomes: [], limit: 0, lease: 30, once: false, reclaim: false), step: index)
        case .kill(let slot):
            await kill(slot)
        }
    }

    /// The wait a store makes of `notBefore` at `wall`, computed as it computes it.
    private static func wait(_ notBefore: Date?, at wall: Double) -> Double {
        max(0, notBefore?.timeIntervalSince(Date(timeIntervalSince1970: wall)) ?? 0)
    }

    private func expect(_ condition: Bool, step: Int, _ what: @autoclosure () -> String) throws {
        if !condition { throw Divergence(step: step, what: what()) }
    }

    /// Runs an operation on both sides: both answer the same, or both refuse with the same error.
    private func both<T: Equatable>(
        step: Int, store: () async throws(QueueError) -> T, model: () throws(QueueError) -> T
    ) async throws {
        var stored: Result<T, QueueError>
        do throws(QueueError) { stored = .success(try await store()) } catch { stored = .failure(error) }
        let modelled: Result<T, QueueError>
        do throws(QueueError) { modelled = .success(try model()) } catch { modelled = .failure(error) }
        if case .failure(let error) = stored { stored = .failure(mapped(error)) }
        switch (stored, modelled) {
        case (.success(let a), .success(let b)) where a == b: return
        case (.failure(let a), .failure(let b)) where Self.same(a, b): return
        default: throw Divergence(step: step, what: "store answered \(stored), model \(modelled)")
        }
    }

    /// The same error, but for the words of an invalid request (which name a store's ids).
    private static func same(_ a: QueueError, _ b: QueueError) -> Bool {
        a.kind == .invalidRequest ? b.kind == .invalidRequest : a == b
    }

    /// A store's error with its ids in the model's.
    private func mapped(_ error: QueueError) -> QueueError {
        switch error.kind {
        case .noSuchEntry: error.entryID.map { .noSuchEntry(EntryID(modelID($0))) } ?? error
        case .entryInFlight: error.entryID.map { .entryInFlight(EntryID(modelID($0))) } ?? error
        case .noSuchDependency: error.entryID.map { .noSuchDependency(EntryID(modelID($0))) } ?? error
        case .dependencyCycle: .dependencyCycle((error.loop ?? []).map { EntryID(modelID($0)) })
        default: error
        }
    }

    // MARK: Enqueue

    private func enqueue(_ specs: [ModelProgram.Spec], step: Int) async throws {
        let store = try await anyStore()
        // The id the next entry receives (a refused insert may use one up on PostgreSQL).
        var next = EntryID((storeIDs.values.max() ?? 0) + 1)
        while try await store.wasIssued(next) { next += 1 }
        var selfID: Int?
        var entries: [OfflineQueueCore.NewEntry] = []
        var modelled: [QueueModel.NewEntry] = []
        for spec in specs {
            let origin = ModelProgram.origins[spec.origin]
            let url = spec.sealed ? origin : origin + "/" + spec.key
            var after = spec.after.map(id)
            var storeAfter = after.map(storeID)
            if spec.afterSelf && specs.count == 1 && spec.coalescing == nil {
                selfID = model.lastID + 1
                after.append(selfID!)
                storeAfter.append(next)
            }
            let reads = spec.reads.map(id).filter(after.contains)
            var entry = OfflineQueueCore.NewEntry(
                idempotencyKey: spec.key, method: "POST", url: url, headers: spec.sealed ? [] : [StoredHeader(name: "X-Key", value: spec.key)],
                body: nil, scopes: [], name: "POST /" + spec.key, group: spec.group, priority: spec.priority, timeout: nil,
                notBefore: spec.wait > 0 ? Date(timeIntervalSince1970: wall + Double(spec.wait)) : nil,
                seal: spec.sealed ? StoredSeal(keyID: "k1", blob: Data(spec.key.utf8)) : nil
            )
            entry.after = storeAfter
            entry.whenParentDies = spec.policy
            entry.keepResponse = spec.keep ? ResponseKeeping() : nil
            entry.references = reads.map { ResponseReference(entry: storeID($0), part: .status) }
            entry.coalescingKey = spec.coalescing
            entry.delivery = spec.maxAttempts.map { EntryDelivery(maxAttempts: $0) }
            entries.append(entry)
            modelled.append(QueueModel.NewEntry(
                key: spec.key, url: url, group: spec.group, priority: spec.priority, wait: Self.wait(entry.notBefore, at: wall), after: after, policy: spec.policy,
                keep: spec.keep, reads: reads, coalescing: spec.coalescing, delivery: entry.delivery
            ))
        }
        if let selfID { modelIDs[next] = selfID }
        defer { if selfID != nil { modelIDs[next] = nil } }
        var stored: Result<[Ticket], QueueError>
        do throws(QueueError) { stored = .success(try await store.insert(entries, now: now)) } catch { stored = .failure(mapped(error)) }
        let expected: Result<[QueueModel.Ticket], QueueError>
        do throws(QueueError) { expected = .success(try model.insert(modelled, now: clock)) } catch { expected = .failure(error) }
        switch (stored, expected) {
        case (.failure(let a), .failure(let b)):
            reached["enqueue refused: \(a.kind)", default: 0] += 1
            try expect(Self.same(a, b), step: step, "enqueue refused: store \(a), model \(b)")
        case (.success(let tickets), .success(let modelTickets)):
            try expect(tickets.count == modelTickets.count, step: step, "enqueue gave \(tickets.count) tickets, model \(modelTickets.count)")
            if selfID != nil { modelIDs[next] = nil }
            for (ticket, expected) in zip(tickets, modelTickets) {
                switch expected {
                case .inserted(let id):
                    try expect(!ticket.deduplicated && ticket.superseded == nil, step: step, "enqueue of \(ticket.idempotencyKey): \(ticket), model inserted")
                    try record(model: id, store: ticket.id, step: step)
                case .deduplicated(let id):
                    try expect(ticket.deduplicated && modelID(ticket.id) == id, step: step, "enqueue of \(ticket.idempotencyKey): \(ticket), model deduplicated as \(id)")
                case .replaced(let id, let superseded):
                    try expect(!ticket.deduplicated && modelID(ticket.id) == id && ticket.superseded != nil, step: step,
                               "enqueue of \(ticket.idempotencyKey): \(ticket), model replaced \(id)")
                    try record(model: superseded, store: ticket.superseded!, step: step)
                }
            }
        default:
            throw Divergence(step: step, what: "enqueue: store \(stored), model \(expected)")
        }
    }

    // MARK: Drain

    /// What the engine's drain makes of `outcome` for `entry`: the lifecycle's transition, and
    /// a conflict resolver's decision.
    private func settlement(_ id: Int, _ outcome: ModelProgram.Outcome, jitter: Double, probe: Bool) -> (QueueModel.Settlement, Settlement) {
        guard let entry = model.entries[id] else {
            let transition = EntryLifecycle.Transition.deliver(status: 200)
            return (QueueModel.Settlement(id: id, transition: transition, keeps: false, url: ""), Settlement(id: storeID(id), transition: transition))
        }
        let policy = entry.delivery?.applied(to: Self.policy) ?? Self.policy
        let age = Duration.clamped(seconds: max(0, t - entry.budget)) ?? .zero
        var replacement: QueueModel.NewEntry?
        let transition: EntryLifecycle.Transition
        var unwell: String?
        if let expired = EntryLifecycle.admit(age: age, policy: policy) {
            transition = expired
        } else {
            let attempt: EntryLifecycle.AttemptOutcome = switch outcome {
            case .ok(let status): .delivered(status: status)
            case .reject(let status), .serverError(let status): .rejected(status: status, retryAfter: nil, excerpt: nil)
            case .conflict(let status, _): .rejected(status: status, retryAfter: nil, excerpt: "conflict")
            case .busy(let status, let retryAfter): .rejected(status: status, retryAfter: retryAfter.map { .seconds($0) }, excerpt: nil)
            case .failed(let retryable): .failed(message: retryable ? "connection reset" : "certificate untrusted", retryable: retryable)
            case .networkGone: .networkGone(message: "the network is gone")
            case .invalid: .invalid(message: "unsendable")
            case .interrupted: .interrupted
            }
            var decided = EntryLifecycle.transition(after: attempt, attempts: entry.attempts, age: age, policy: policy, unitRandom: jitter)
            if case .conflict(let conflict) = decided, case .conflict(_, let resolver) = outcome {
                switch resolver {
                case .none, .leave: break
                case .drop: decided = .drop(conflict)
                case .fail: decided = .deadLetter(.init(.conflict, status: conflict.status, error: conflict.error))
                case .send:
                    decided = .retry(.init(after: .zero, status: conflict.status, error: conflict.error))
                    replacement = QueueModel.NewEntry(
                        key: entry.key + "r", url: entry.url, group: entry.group, priority: entry.priority, wait: 0, after: [], policy: .die,
                        keep: entry.keep, reads: [], coalescing: nil, delivery: entry.delivery
                    )
                }
            }
            // A reset says the server is unwell (the engine reads it off the transport's failure).
            if case .failed(true) = outcome { unwell = "connection reset" }
            // As the engine settles a probe that found the server still unwell.
            if probe, let failed = EntryLifecycle.probeFailed(attempt, unwell: unwell) { decided = failed }
            transition = decided
        }
        var stored = Settlement(id: storeID(id), transition: transition, url: entry.url)
        stored.unwell = unwell
        stored.probe = probe
        // As the engine draws it: only for an answer that fails the origin.
        if case .unwell? = stored.flowSignal { stored.jitter = jitter }
        if case .overload(503)? = stored.flowSignal { stored.jitter = jitter }
        let keeps = entry.keep && { if case .deliver = transition { true } else { false } }()
        if keeps { stored.kept = StoredResponse(bytes: KeptResponse(status: 200).encoded, keyID: nil) }
        if let replacement {
            var new = OfflineQueueCore.NewEntry(
                idempotencyKey: replacement.key, method: "POST", url: replacement.url, headers: [], body: nil, scopes: [],
                name: "POST /" + replacement.key, group: replacement.group, priority: replacement.priority, timeout: nil, notBefore: nil
            )
            new.keepResponse = replacement.keep ? ResponseKeeping() : nil
            new.delivery = replacement.delivery
            stored.replacement = Settlement.Replacement(entry: new, reason: "replaced by the conflict resolver")
        }
        return (
            QueueModel.Settlement(id: id, transition: transition, keeps: keeps, replacement: replacement, url: entry.url, unwell: stored.unwell, probe: probe,
                jitter: stored.jitter),
            stored
        )
    }

    private func settlements(_ session: inout Session, _ outcomes: [ModelProgram.Outcome], step: Int) -> ([QueueModel.Settlement], [Settlement]) {
        let held = session.believed.sorted()
        var modelled: [QueueModel.Settlement] = []
        var stored: [Settlement] = []
        for (index, (id, outcome)) in zip(held, outcomes).enumerated() {
            let jitter = Double((step &* 7919 &+ index &* 104_729) % 1000) / 1000
            let (a, b) = settlement(id, outcome, jitter: jitter, probe: session.probes.contains(id))
            modelled.append(a)
            stored.append(b)
        }
        let settled = Set(modelled.map(\.id))
        session.believed.removeAll { settled.contains($0) }
        let probing = session.probes.intersection(settled)
        session.probes.subtract(settled)
        for settlement in modelled {
            let name = switch settlement.transition {
            case .deliver: "delivered"
            case .retry(let retry) where retry.originPause != nil: "retried, pausing the origin"
            case .retry(let retry) where retry.status == 429 || retry.status == 503: "retried, overloading the origin"
            case .retry(let retry) where retry.waitingForNetwork: "waiting for the network"
            case .retry: settlement.replacement == nil ? "retried" : "replaced by a conflict resolver"
            case .deadLetter(let dead): "dead (\(dead.reason.rawValue))"
            case .release: "released"
            case .conflict: "left in conflict"
            case .drop: "dropped after a conflict"
            }
            reached["settlement: " + name, default: 0] += 1
            if probing.contains(settlement.id) { reached["probe settled: " + name, default: 0] += 1 }
        }
        return (modelled, stored)
    }

    private func drain(_ drain: ModelProgram.Drain, step: Int) async throws {
        var session = try await session(drain.slot)
        let carry = !session.started
        session.started = true
        let (modelled, stored) = settlements(&session, drain.outcomes, step: step)
        // The reading the drain hands the store, and the time the store makes of it.
        let sinceUptime = drain.once ? uptime - 5 : nil
        let since = sinceUptime.map { kind == .postgres ? t - (uptime - $0) : $0 }
        let result = try await session.store.settleAndClaim(
            stored, now: now, claimLimit: drain.limit, lease: .seconds(drain.lease), attemptedSince: sinceUptime,
            chores: ClaimChores(carryOver: carry, reclaimOrphans: drain.reclaim, maxDelay: .seconds(3600), flow: Self.flow)
        )
        let expected = model.settleAndClaim(
            modelled, session: session.number, now: clock, limit: drain.limit, lease: Double(drain.lease), since: since, carryOver: carry,
            maxDelay: 3600, reclaim: drain.reclaim, flow: Self.flow
        )
        let claimed = result.claimed.map { modelID($0.id) }
        reached["claimed", default: 0] += claimed.count
        reached["settlements lost", default: 0] += result.lost.count
        reached["taken back from a drainer that is gone", default: 0] += result.reclaimed
        session.believed += claimed.filter { !session.believed.contains($0) }
        session.probes.formUnion(result.probes.map(modelID))
        sessions[drain.slot] = session
        try expect(Set(result.lost.map(modelID)) == expected.lost, step: step, "lost: store \(result.lost.map(modelID).sorted()), model \(expected.lost.sorted())")
        try expect(claimed == expected.claimed, step: step, "claimed: store \(claimed), model \(expected.claimed)")
        try expect(result.reclaimed == expected.reclaimed, step: step, "reclaimed: store \(result.reclaimed), model \(expected.reclaimed)")
        try expect(Self.close(result.heldFor?.seconds, expected.heldFor), step: step,
                   "held for: store \(result.heldFor.map { "\($0.seconds)" } ?? "nil"), model \(expected.heldFor.map { "\($0)" } ?? "nil")")
        try expect(Self.close(result.probeIn?.seconds, expected.probeIn), step: step,
                   "next probe in: store \(result.probeIn.map { "\($0.seconds)" } ?? "nil"), model \(expected.probeIn.map { "\($0)" } ?? "nil")")
        try expect(Set(result.pausedOrigins) == expected.pausedOrigins, step: step,
                   "paused origins: store \(result.pausedOrigins.sorted()), model \(expected.pausedOrigins.sorted())")
        try expect(Set(result.probes.map(modelID)) == expected.probes, step: step,
                   "probes: store \(result.probes.map(modelID).sorted()), model \(expected.probes.sorted())")
        try expect(Set(result.opened) == expected.opened && Set(result.closed) == expected.closed, step: step,
                   "circuits opened and closed: store \(result.opened) \(result.closed), model \(expected.opened.sorted()) \(expected.closed.sorted())")
        reached["circuits opened", default: 0] += result.opened.count
        reached["circuits closed by a probe", default: 0] += result.closed.count
        reached["probes", default: 0] += result.probes.count
        for entry in result.claimed {
            let id = modelID(entry.id)
            guard let modelled = model.entries[id] else { continue }
            try expect(abs(entry.budgetUptime - uptime(modelled.budget)) < 1e-3, step: step,
                       "entry \(id) claimed with its budget from \(entry.budgetUptime), model \(uptime(modelled.budget))")
        }
    }

    private func settle(slot: Int, outcomes: [ModelProgram.Outcome], step: Int) async throws {
        var session = try await session(slot)
        let (modelled, stored) = settlements(&session, outcomes, step: step)
        sessions[slot] = session
        guard !stored.isEmpty else { return }
        let lost = try await session.store.settle(stored, now: now)
        let expected = model.settleOnly(modelled, session: session.number, now: clock)
        try expect(Set(lost.map(modelID)) == expected, step: step, "lost: store \(lost.map(modelID).sorted()), model \(expected.sorted())")
    }

    private func bulk(_ operation: BulkOperation, _ selection: ModelProgram.Selection, dryRun: Bool, step: Int) async throws {
        let origin = selection.origin.map { ModelProgram.origins[$0] + "/" }
        var stored = EntrySelection(states: Set(selection.states), group: selection.group, status: selection.status, urlPrefix: origin)
        stored.limit = selection.limit
        let modelled = QueueModel.Selection(
            states: Set(selection.states), group: selection.group, status: selection.status, urlPrefix: origin, limit: selection.limit
        )
        // The engine asks the store nothing for a selection that matches no state.
        let change = operation.states(of: stored).isEmpty ? BulkChange() : try await anyStore().change(operation, matching: stored, now: now, dryRun: dryRun)
        let expected = model.change(operation, matching: modelled, now: clock, dryRun: dryRun)
        try expect(change.ids.map(modelID) == expected.ids && change.skipped.map(modelID) == expected.skipped, step: step,
                   "\(operation) matching: store changed \(change.ids.map(modelID)) skipped \(change.skipped.map(modelID)), model \(expected.ids) skipped \(expected.skipped)")
    }

    /// Equal within two milliseconds: a store hands durations over in whole milliseconds,
    /// rounded up, and the boot clock's readings subtract with an error of their own.
    private static func close(_ a: Double?, _ b: Double?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): abs(a - b) < 2e-3
        default: false
        }
    }

    // MARK: - The observable state

    private struct View: Hashable, CustomStringConvertible {
        var key: String
        var state: EntryState
        var attempts: Int
        var group: String?
        var priority: Int
        var lastStatus: Int?
        var deadReason: EntryLifecycle.DeadReason?
        var waiting: Bool
        var coalescing: String?
        var owner: Int?
        var due: Double?
        var keep: Bool
        var url: String
        var tried: Bool

        var description: String {
            "\(key) \(state) attempts=\(attempts) status=\(lastStatus.map(String.init) ?? "-") dead=\(deadReason?.rawValue ?? "-")"
                + " waiting=\(waiting) owner=\(owner.map(String.init) ?? "-") due=\(due.map { String(format: "%.3f", $0) } ?? "-")"
                + " group=\(group ?? "-") priority=\(priority) replace=\(coalescing ?? "-") keep=\(keep) tried=\(tried)"
        }

        /// Equal but for due times within a millisecond.
        func matches(_ other: View) -> Bool {
            var a = self, b = other
            let close = ModelRunner.close(a.due, b.due)
            a.due = nil
            b.due = nil
            return a == b && close
        }
    }

    private func view(of entry: QueueModel.Entry) -> View {
        View(
            key: entry.key, state: entry.state, attempts: entry.attempts, group: entry.group, priority: entry.priority, lastStatus: entry.lastStatus,
            deadReason: entry.deadReason, waiting: entry.waiting, coalescing: entry.coalescing, owner: entry.owner,
            due: entry.state == .pending ? uptime(entry.due) : nil, keep: entry.keep, url: entry.url, tried: entry.tried
        )
    }

    private func view(of entry: QueueEntry) -> View {
        View(
            key: entry.idempotencyKey, state: entry.state, attempts: entry.attempts, group: entry.group, priority: entry.priority,
            lastStatus: entry.lastStatus, deadReason: entry.deadReason, waiting: entry.waitingForNetwork, coalescing: entry.coalescingKey,
            owner: entry.leaseOwner.map { owners[$0] ?? -1 }, due: entry.state == .pending ? entry.nextDue.map(\.uptime) : nil,
            keep: entry.keepResponse != nil, url: entry.url, tried: entry.lastAttemptAt != nil
        )
    }

    /// Compares everything a reader of the store can see with the model, and checks the invariants.
    func compare(step: Int, deep: Bool = false) async throws {
        let store = try await anyStore()
        let entries = try await store.entries(EntryFilter(limit: 1_000_000), now: now)
        for entry in entries where modelIDs[entry.id] == nil {
            // An entry the step made whose id no answer gave (a conflict resolver's superseded copy).
            guard let id = model.byKey[entry.idempotencyKey], storeIDs[id] == nil else {
                throw Divergence(step: step, what: "the store holds entry \(entry.id) (\(entry.idempotencyKey), \(entry.state)) the model does not")
            }
            try record(model: id, store: entry.id, step: step)
        }
        let stored = Dictionary(uniqueKeysWithValues: entries.map { (modelID($0.id), view(of: $0)) })
        for id in Set(stored.keys).union(model.entries.keys).sorted() {
            let expected = model.entries[id].map(view)
            guard let got = stored[id], let expected, got.matches(expected) else {
                throw Divergence(step: step, what: "entry \(id): store \(stored[id].map(\.description) ?? "none"), model \(expected.map(\.description) ?? "none")")
            }
        }
        let counts = try await store.counts(now: now)
        let expected = model.counts(now: clock)
        let got = QueueModel.Counts(
            pending: counts.pending, inflight: counts.inflight, delivered: counts.delivered, dead: counts.dead, blocked: counts.blocked,
            superseded: counts.superseded, conflict: counts.conflict, due: counts.due, heldByFlow: counts.heldByFlow,
            inflightOrphaned: counts.inflightOrphaned,
            stuck: counts.blocked > 0 ? DependencyRule.stuck(try await store.blockedLinks()).count : 0,
            nextDue: counts.nextDue.map(\.uptime), drainers: Set(counts.drainers.map { owners[$0] ?? -1 })
        )
        // The next due time as a drain waits for it: one already passed is now (a store may
        // report any passed one: SQLite finds one entry never given a wait, not the earliest).
        var a = got, b = expected
        let present = now.uptime
        a.nextDue = a.nextDue.map { max($0, present) }
        b.nextDue = b.nextDue.map(uptime).map { max($0, present) }
        let nextClose = Self.close(a.nextDue, b.nextDue)
        a.nextDue = nil
        b.nextDue = nil
        try expect(a == b && nextClose, step: step, "counts: store \(got), model \(expected) (on the boot clock: next due \(expected.nextDue.map(uptime).map { "\($0)" } ?? "nil"))")
        // Counts are the sum of the states the entries are in.
        let tally = Dictionary(grouping: entries, by: \.state).mapValues(\.count)
        try expect(counts.total == entries.count && counts.pending == tally[.pending, default: 0] && counts.blocked == tally[.blocked, default: 0],
                   step: step, "counts \(counts) are not the sum of the entries' states \(tally)")
        let pauses = try await store.pauseStatus(now: now)
        try expect(Set(pauses.pauses.map(\.group)) == model.pauses && pauses.pendingHeld == model.pendingHeld, step: step,
                   "pauses: store \(pauses.pauses.map { $0.group ?? "queue" }) holding \(pauses.pendingHeld), model \(model.pauses.map { $0 ?? "queue" }) holding \(model.pendingHeld)")
        let flows = try await store.originFlows(now: now).map { flow in
            QueueModel.FlowView(
                origin: flow.origin, pausedFor: flow.pausedUntil.map { $0.timeIntervalSince1970 - wall }, pauseStatus: flow.pauseStatus,
                concurrency: flow.concurrency, limit: flow.limit, inflight: flow.inflight,
                probeIn: flow.circuit.map { $0.nextProbeAt.timeIntervalSince1970 - wall }, failures: flow.circuit?.failures,
                lastError: flow.circuit?.lastError
            )
        }
        let modelFlows = model.originFlows(now: clock)
        let flowsMatch = flows.count == modelFlows.count && zip(flows, modelFlows).allSatisfy { a, b in
            var a = a, b = b
            let close = Self.close(a.pausedFor, b.pausedFor) && Self.close(a.probeIn, b.probeIn)
            (a.pausedFor, b.pausedFor, a.probeIn, b.probeIn) = (nil, nil, nil, nil)
            return a == b && close
        }
        try expect(flowsMatch, step: step, "origin flows: store \(flows), model \(modelFlows)")
        let problems = model.invariantViolations()
        try expect(problems.isEmpty, step: step, "invariants: \(problems.joined(separator: "; "))")
        if deep { try await compareLinks(store, step: step) }
    }

    /// Each entry's links both ways, and the responses kept.
    private func compareLinks(_ store: any QueueStorage, step: Int) async throws {
        for id in model.entries.keys.sorted() {
            let links = try await store.dependencies(of: storeID(id))
            let expected = model.dependencies(of: id)
            try expect(links.parents.map(modelID).sorted() == expected.parents && links.children.map(modelID).sorted() == expected.children, step: step,
                       "links of \(id): store \(links.parents.map(modelID)) / \(links.children.map(modelID)), model \(expected.parents) / \(expected.children)")
            let kept = try await store.keptResponse(of: storeID(id)) != nil
            try expect(kept == model.keptResponse(id), step: step, "entry \(id) kept a response: store \(kept), model \(model.keptResponse(id))")
        }
    }
}
