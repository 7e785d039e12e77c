import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueue
import OfflineQueueCore
package import QueueTestSupport

/// The share of the model check that goes through ``OfflineQueue`` itself: several drainers
/// (queues over one store) drain at once, each with the real drain engine, against an origin
/// that answers each request as its entry's script says and watches what arrives. Their
/// interleavings are the scheduler's, so no step-by-step model can say each answer; what is
/// checked after every step are the invariants (what the origin saw, and the store's state), and
/// at the end, once the origin answers everything, that every entry ended as its script and its
/// parents allow, and nothing was lost.
package struct EngineCheck {
    struct Spec: Hashable, Sendable, CustomStringConvertible {
        var key: String
        var group: String?
        var priority = 0
        var after: [String] = []
        var policy: ParentDeathPolicy = .die
        var coalescing: String?
        /// The statuses the origin answers its attempts with, the last one repeated.
        var script: [Int]

        var description: String {
            "(\(key)" + (group.map { " group=\($0)" } ?? "") + (priority == 0 ? "" : " priority=\(priority)")
                + (after.isEmpty ? "" : " after=\(after.joined(separator: ","))/\(policy)") + (coalescing.map { " replace=\($0)" } ?? "")
                + " answers=\(script.map(String.init).joined(separator: ","))" + ")"
        }
    }

    enum Step: Hashable, Sendable, CustomStringConvertible {
        case enqueue([Spec])
        /// Drains, at once, by each drainer named.
        case drain([Int])
        case advance(Double)
        case kill(Int)
        case retryDead
        case purgeDelivered
        case pause(String)
        case resume(String)

        var description: String {
            switch self {
            case .enqueue(let specs): "enqueue " + specs.map(\.description).joined(separator: ", ")
            case .drain(let slots): "drain by " + slots.map { "drainer \($0)" }.joined(separator: " and ") + " at once"
            case .advance(let seconds): "advance \(seconds) s"
            case .kill(let slot): "kill drainer \(slot)"
            case .retryDead: "retry every dead entry"
            case .purgeDelivered: "purge the delivered entries"
            case .pause(let group): "pause \(group)"
            case .resume(let group): "resume \(group)"
            }
        }
    }

    static func program(seed: UInt64, length: Int, drainers: Int) -> [Step] {
        var rng = SeededGenerator(seed: seed)
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
        var keys: [String] = []
        var steps: [Step] = []
        for _ in 0..<length {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<35:
                steps.append(.enqueue((0..<Int.random(in: 1...3, using: &rng)).map { _ in
                    let key = "e\(keys.count + 1)"
                    var spec = Spec(key: key, script: (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                        pick([200, 200, 200, 201, 500, 503, 429, 422, 409])
                    })
                    if chance(0.5) { spec.group = pick(["g1", "g2"]) }
                    if chance(0.2) { spec.priority = Int.random(in: 0...2, using: &rng) }
                    if !keys.isEmpty && chance(0.35) { spec.after = Array(Set((0..<Int.random(in: 1...2, using: &rng)).map { _ in pick(keys) })).sorted() }
                    if !spec.after.isEmpty { spec.policy = pick([.die, .wait, .proceed]) }
                    if chance(0.15) { spec.coalescing = pick(["k1", "k2"]) }
                    keys.append(key)
                    return spec
                }))
            case 35..<70:
                let count = Int.random(in: 1...max(1, drainers), using: &rng)
                steps.append(.drain(Array(Set((0..<count).map { _ in Int.random(in: 0..<max(1, drainers), using: &rng) })).sorted()))
            case 70..<85: steps.append(.advance(pick([0.5, 2, 10, 60])))
            case 85..<90: steps.append(.kill(Int.random(in: 0..<max(1, drainers), using: &rng)))
            case 90..<94: steps.append(.retryDead)
            case 94..<96: steps.append(.purgeDelivered)
            case 96..<98: steps.append(.pause(pick(["g1", "g2"])))
            default: steps.append(.resume(pick(["g1", "g2"])))
            }
        }
        return steps
    }

    /// Runs `steps` on a fresh store of `kind`; the first violation, if any.
    static func failure(of steps: [Step], on kind: StoreKind) async -> Divergence? {
        let runner: EngineRunner
        do {
            runner = try await EngineRunner(kind: kind)
        } catch {
            return Divergence(step: -1, what: "the store could not be opened: \(error)")
        }
        var found: Divergence?
        var index = 0
        do {
            for step in steps {
                try await runner.run(step, index: index)
                index += 1
            }
            try await runner.finish(step: max(0, index - 1))
        } catch let divergence as Divergence {
            found = divergence
        } catch {
            found = Divergence(step: index, what: "the queue threw: \(error)")
        }
        await runner.remove()
        return found
    }

    package struct Report: CustomStringConvertible {
        package var programs = 0
        package var steps = 0
        package var found: [String] = []
        var seconds = 0.0

        package var description: String {
            "through OfflineQueue: \(programs) programs, \(steps) steps, \(found.count) violations, \(String(format: "%.1f", seconds)) s"
                + found.map { "\n\n" + $0 }.joined()
        }
    }

    /// Programs of `length` steps until `steps` have run, or a violation (then shrunk).
    package static func run(_ kind: StoreKind, steps total: Int, seed: UInt64, length: Int, drainers: Int) async -> Report {
        var report = Report()
        let started = Date()
        var program = 0
        while report.steps < total {
            let programSeed = ModelCheck.seed(seed, program: program)
            let count = min(length, total - report.steps)
            let steps = Self.program(seed: programSeed, length: count, drainers: drainers)
            program += 1
            report.programs += 1
            report.steps += count
            guard let divergence = await failure(of: steps, on: kind) else { continue }
            var current = Array(steps.prefix(divergence.step + 1))
            var last = divergence
            var chunk = max(1, current.count / 2)
            var tries = 0
            while chunk >= 1 && tries < 300 {
                var start = 0
                var removed = false
                while start < current.count && tries < 300 {
                    var candidate = current
                    candidate.removeSubrange(start..<min(candidate.count, start + chunk))
                    tries += 1
                    if !candidate.isEmpty, let found = await failure(of: candidate, on: kind) {
                        current = Array(candidate.prefix(found.step + 1))
                        last = found
                        removed = true
                    } else {
                        start += chunk
                    }
                }
                if !removed { chunk /= 2 }
            }
            report.found.append("""
                \(kind.rawValue), through OfflineQueue: the program of seed \(programSeed) (\(count) steps, \(drainers) drainers) broke an invariant at \(divergence)
                shrunk to \(current.count) steps (a run's interleaving is the scheduler's: a shrunk program may need a few runs to show it again), at \(last):
                \(current.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n"))
                replay: Tools/model-check --engine --store \(kind.rawValue) --seed \(programSeed) --steps \(count) --drainers \(drainers)
                """)
            break
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }
}

/// The origin of the engine-level programs: answers each request as its entry's script says
/// (by the request's path, its entry's key) and checks what arrives: never two entries of one
/// group at once, never a child before each parent it waits for (under `die` or `wait`) was
/// answered with a 2xx.
final class ScriptedOrigin: Transport {
    struct State {
        var scripts: [String: [Int]] = [:]
        var attempts: [String: Int] = [:]
        var sending: [String: Int] = [:]
        var answered2xx: Set<String> = []
        /// The request each entry holds now, by entry id (a replacement under a coalescing key
        /// takes an entry's place, keeping its id and the entries that wait for it).
        var requests: [EntryID: String] = [:]
        var violations: [String] = []
        /// Answer 200 to everything (the program's end: everything may now be delivered).
        var healed = false
    }

    let state = LockedBox(State())

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        let key = String((request.path ?? "/").split(separator: "/").last ?? "")
        let group = request.headerFields[HTTPField.Name("X-Group")!]
        let parents = request.headerFields[HTTPField.Name("X-Parents")!].map { $0.split(separator: ",").compactMap { EntryID($0) } } ?? []
        let status = state.withLock { state -> Int in
            if let group {
                if state.sending[group, default: 0] > 0 { state.violations.append("\(key) of group \(group) arrived while another of its group was being sent") }
                state.sending[group, default: 0] += 1
            }
            for parent in parents where !state.answered2xx.contains(state.requests[parent] ?? "") {
                state.violations.append("\(key) arrived before its parent, entry \(parent) (\(state.requests[parent] ?? "?")), was delivered")
            }
            let attempt = state.attempts[key, default: 0]
            state.attempts[key] = attempt + 1
            let script = state.scripts[key] ?? [200]
            return state.healed ? 200 : script[min(attempt, script.count - 1)]
        }
        // The exchange takes a moment: others may arrive meanwhile.
        await Task.yield()
        state.withLock { state in
            if let group { state.sending[group, default: 1] -= 1 }
            if (200..<300).contains(status) { state.answered2xx.insert(key) }
        }
        var headers = HTTPFields()
        headers[.contentLength] = "0"
        return TransportResponse(head: HTTPResponse(status: HTTPResponse.Status(code: status), headerFields: headers), body: ByteStream(data: Data()))
    }
}

/// Runs engine-level steps on one store with several drainers.
final class EngineRunner {
    let kind: StoreKind
    let place: TestStore
    let clock = ManualQueueClock(start: QueueTime(wall: Date(), boot: "engine-" + UUID().uuidString.prefix(8).lowercased(), uptime: 1000))
    let origin = ScriptedOrigin()
    private var drainers: [Int: OfflineQueue] = [:]
    private var operatorQueue: OfflineQueue?
    /// Enqueued specs by key (the last under each key).
    private var specs: [String: EngineCheck.Spec] = [:]

    init(kind: StoreKind) async throws {
        self.kind = kind
        place = try TestStore(kind, database: kind == .postgres ? try await ModelRunner.modelDatabase() : nil)
    }

    private func open() async throws -> OfflineQueue {
        let policy = DeliveryPolicy(backoff: Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(8)), maxAttempts: 6, maxAge: nil,
                                    maxRetryAfter: .seconds(30), networkRecheck: .seconds(5), leaseDuration: .seconds(60))
        var configuration = QueueConfiguration(path: place.path, durability: .normal, policy: policy, concurrency: 4)
        configuration.clock = clock.queueClock
        configuration.metrics.isEnabled = false
        let client = APIClient(baseURL: URL(string: "https://origin.test")!, transport: origin)
        return try await place.open(configuration, client: client)
    }

    private func drainer(_ slot: Int) async throws -> OfflineQueue {
        if let queue = drainers[slot] { return queue }
        let queue = try await open()
        drainers[slot] = queue
        return queue
    }

    private func operatorsQueue() async throws -> OfflineQueue {
        if let operatorQueue { return operatorQueue }
        let queue = try await open()
        operatorQueue = queue
        return queue
    }

    func remove() async {
        for queue in drainers.values { await queue.close() }
        await operatorQueue?.close()
        await place.remove()
    }

    func run(_ step: EngineCheck.Step, index: Int) async throws {
        let queue = try await operatorsQueue()
        switch step {
        case .enqueue(let specs):
            var requests: [QueuedRequest] = []
            for spec in specs {
                var headers: [(name: String, value: String)] = []
                if let group = spec.group { headers.append(("X-Group", group)) }
                var after: [EntryID] = []
                for parent in spec.after {
                    guard let id = try await queue.entry(idempotencyKey: parent)?.id else { continue }
                    after.append(id)
                }
                if !after.isEmpty && spec.policy != .proceed { headers.append(("X-Parents", after.map(String.init).joined(separator: ","))) }
                let options = EnqueueOptions(
                    group: spec.group, priority: spec.priority, idempotencyKey: spec.key, after: after, whenParentDies: spec.policy,
                    coalescingKey: spec.coalescing
                )
                requests.append(QueuedRequest(method: "POST", url: "https://origin.test/" + spec.key, headers: headers, options: options))
            }
            origin.state.withLock { state in for spec in specs { state.scripts[spec.key] = spec.script } }
            do throws(QueueError) {
                let tickets = try await queue.enqueue(requests)
                for spec in specs { self.specs[spec.key] = spec }
                origin.state.withLock { state in
                    for (ticket, spec) in zip(tickets, specs) where !ticket.deduplicated {
                        state.requests[ticket.id] = spec.key
                        if let superseded = ticket.superseded { state.requests[superseded] = nil }
                    }
                }
            } catch {
                // Refused with nothing stored (a parent purged meanwhile, a loop): the origin never hears of them.
                guard [QueueError.Kind.noSuchDependency, .dependencyCycle].contains(error.kind) else { throw error }
            }
        case .drain(let slots):
            let queues = try await slots.asyncMap { try await drainer($0) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for queue in queues { group.addTask { _ = try await queue.drain(.untilIdle) } }
                try await group.waitForAll()
            }
        case .advance(let seconds):
            clock.advance(by: .milliseconds(Int64(seconds * 1000)))
        case .kill(let slot):
            await drainers.removeValue(forKey: slot)?.close()
        case .retryDead:
            _ = try await queue.retry(matching: EntrySelection(states: [.dead]))
        case .purgeDelivered:
            _ = try await queue.purge(matching: EntrySelection(states: [.delivered]))
        case .pause(let group):
            _ = try await queue.pause(group: group)
        case .resume(let group):
            _ = try await queue.resume(group: group)
        }
        try await check(step: index)
    }

    /// The invariants, after every step: what the origin saw, the counts as the sum of the
    /// states, no loop.
    private func check(step: Int) async throws {
        let violations = origin.state.current.violations
        if !violations.isEmpty { throw Divergence(step: step, what: violations.joined(separator: "; ")) }
        let queue = try await operatorsQueue()
        let counts = try await queue.counts()
        let entries = try await queue.entries(EntryFilter(limit: 1_000_000))
        let tally = Dictionary(grouping: entries, by: \.state).mapValues(\.count)
        if counts.total != entries.count || counts.pending != tally[.pending, default: 0] || counts.delivered != tally[.delivered, default: 0] {
            throw Divergence(step: step, what: "counts \(counts) are not the sum of the entries' states \(tally)")
        }
        if counts.stuck > 0 { throw Divergence(step: step, what: "\(counts.stuck) entries wait for each other in a loop") }
    }

    /// The end: the origin answers everything, the drainers drain until nothing moves; then
    /// nothing is pending or in flight, and every entry ended as its script and parents allow.
    func finish(step: Int) async throws {
        origin.state.withLock { $0.healed = true }
        let queue = try await operatorsQueue()
        for group in ["g1", "g2"] { _ = try await queue.resume(group: group) }
        let slots = drainers.isEmpty ? [0] : drainers.keys.sorted()
        var last: QueueCounts?
        for _ in 0..<40 {
            clock.advance(by: .seconds(120))
            try await run(.drain(slots), index: step)
            let counts = try await queue.counts()
            if counts.inflight == 0 && counts == last { break }
            last = counts
        }
        let entries = try await queue.entries(EntryFilter(limit: 1_000_000))
        // What is left pending waits behind an earlier entry of its group that holds it: one in
        // conflict (for an operator) or blocked (behind a parent that will not be delivered).
        var holding: [String: EntryID] = [:]
        for entry in entries where [.conflict, .blocked].contains(entry.state) {
            if let group = entry.group { holding[group] = min(holding[group] ?? .max, entry.id) }
        }
        for entry in entries where entry.state == .pending || entry.state == .inflight {
            guard entry.state == .pending, let group = entry.group, let holder = holding[group], holder < entry.id else {
                throw Divergence(step: step, what: "after the origin healed, entry \(entry.id) (\(entry.idempotencyKey)) is still \(entry.state)")
            }
        }
        let answered = origin.state.current.answered2xx
        // Nothing lost: each request enqueued is in the queue, or was delivered (and purged since).
        for key in specs.keys.sorted() where !answered.contains(key) {
            if try await queue.entry(idempotencyKey: key) == nil {
                throw Divergence(step: step, what: "\(key) was enqueued, never delivered, and is gone from the queue")
            }
        }
        for entry in try await queue.entries(EntryFilter(limit: 1_000_000)) {
            switch entry.state {
            case .delivered:
                if !answered.contains(entry.idempotencyKey) {
                    throw Divergence(step: step, what: "entry \(entry.id) (\(entry.idempotencyKey)) is delivered, but the origin never answered it with a 2xx")
                }
            case .blocked:
                // Only behind a parent that was not delivered (dead under `wait`, in conflict,
                // blocked, or held behind its group's entry in conflict).
                let links = try await queue.dependencies(of: entry.id)
                var waiting = false
                for parent in links.parents {
                    let stored = try await queue.entry(parent)
                    if let stored, stored.state != .delivered { waiting = true }
                }
                if !waiting { throw Divergence(step: step, what: "entry \(entry.id) (\(entry.idempotencyKey)) is blocked though every parent was delivered") }
            default:
                break
            }
        }
    }
}
