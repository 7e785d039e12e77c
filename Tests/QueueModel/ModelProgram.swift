import Foundation
import OfflineQueueCore

/// A random program over the storage contract: the steps a queue meets in any order (enqueues,
/// drain commits by several drainers, settlements with every outcome, deaths and restarts of
/// drainers, clock steps and reboots, operator actions, retention), each one small enough to
/// read when a divergence is printed. Entries are named by their idempotency keys (`e7`), so a
/// program whose steps are removed by shrinking still means what it says of the rest.
struct ModelProgram: Hashable, Sendable, CustomStringConvertible {
    var steps: [Step]

    enum Step: Hashable, Sendable {
        case enqueue([Spec])
        /// A drainer's commit: its held entries settled with `outcomes` (in id order), then a
        /// claim. A drainer whose process died restarts here with a new hold.
        case drain(Drain)
        /// A drainer records outcomes without claiming.
        case settle(slot: Int, outcomes: [Outcome])
        case renew(slot: Int, lease: Int)
        case wakeNetwork
        case limits([Limit])
        case retry([String]?)
        case purge([String])
        case purgeStates([EntryState])
        case bulk(retry: Bool, selection: Selection, dryRun: Bool)
        case pause(String?)
        case resume(String?)
        case resumeOrigin(Int)
        case release([String])
        case retention(keepSeconds: Int)
        case advance(Double)
        case stepWall(Int)
        case reboot(gap: Int)
        /// A drainer's process dies holding what it holds.
        case kill(slot: Int)
    }

    struct Spec: Hashable, Sendable {
        var key: String
        var group: String?
        var priority = 0
        var origin = 0
        var after: [String] = []
        /// Also waits for the id it is about to receive (refused: a loop).
        var afterSelf = false
        var policy: ParentDeathPolicy = .die
        var keep = false
        var reads: [String] = []
        var coalescing: String?
        var wait = 0
        var sealed = false
        var maxAttempts: Int?
    }

    struct Drain: Hashable, Sendable {
        var slot: Int
        var outcomes: [Outcome]
        var limit: Int
        var lease: Int
        /// Skips entries attempted since the commit's own time (a drain that tries each once).
        var once: Bool
        var reclaim: Bool
    }

    enum Resolver: String, Hashable, Sendable {
        case none, leave, drop, fail, send
    }

    enum Outcome: Hashable, Sendable {
        case ok(Int)
        case reject(Int)
        case conflict(Int, Resolver)
        case busy(Int, retryAfter: Int?)
        case serverError(Int)
        case failed(retryable: Bool)
        case networkGone
        case invalid
        case interrupted
    }

    struct Limit: Hashable, Sendable {
        var origin: String
        var rate: Double?
        var burst: Int
        var concurrency: Int?
        var openAfter: Int? = nil
    }

    struct Selection: Hashable, Sendable {
        var states: [EntryState] = []
        var group: String?
        var status: ClosedRange<Int>?
        var origin: Int?
        var limit: Int?
    }

    /// The origins entries go to; a limit may name the pattern `https://*.b.test`.
    static let origins = ["https://a.test", "https://b.test:8443", "https://x.b.test", "http://c.test"]
    static let groups = ["g1", "g2", "g3"]

    var description: String {
        steps.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n")
    }
}

extension ModelProgram.Step: CustomStringConvertible {
    var description: String {
        switch self {
        case .enqueue(let specs): "enqueue " + specs.map(\.description).joined(separator: ", ")
        case .drain(let drain):
            "drain slot \(drain.slot): settle [\(drain.outcomes.map(\.description).joined(separator: ", "))], claim \(drain.limit) for \(drain.lease) s"
                + (drain.once ? ", once" : "") + (drain.reclaim ? ", reclaiming orphans" : "")
        case .settle(let slot, let outcomes): "settle slot \(slot): [\(outcomes.map(\.description).joined(separator: ", "))]"
        case .renew(let slot, let lease): "renew slot \(slot)'s leases for \(lease) s"
        case .wakeNetwork: "network back: wake its waiters"
        case .limits(let limits): "limits [" + limits.map { "\($0.origin)=\($0.rate.map { "\($0)/s,burst=" } ?? "")\($0.rate == nil ? "" : "\($0.burst)")\($0.concurrency.map { ",concurrency=\($0)" } ?? "")\($0.openAfter.map { ",open-after=\($0)" } ?? "")" }.joined(separator: "; ") + "]"
        case .retry(let keys): "retry " + (keys.map { $0.joined(separator: " ") } ?? "every dead entry")
        case .purge(let keys): "purge " + keys.joined(separator: " ")
        case .purgeStates(let states): "purge states " + states.map(\.rawValue).joined(separator: ",")
        case .bulk(let retry, let selection, let dryRun): "\(retry ? "retry" : "purge") matching \(selection)" + (dryRun ? " (dry run)" : "")
        case .pause(let group): "pause \(group ?? "the queue")"
        case .resume(let group): "resume \(group ?? "the queue")"
        case .resumeOrigin(let origin): "resume origin \(ModelProgram.origins[origin])"
        case .release(let keys): "release " + keys.joined(separator: " ")
        case .retention(let keep): "retention: delete delivered older than \(keep) s"
        case .advance(let seconds): "advance \(seconds) s"
        case .stepWall(let seconds): "step the wall clock by \(seconds) s"
        case .reboot(let gap): "reboot (\(gap) s down)"
        case .kill(let slot): "kill slot \(slot)"
        }
    }
}

extension ModelProgram.Spec: CustomStringConvertible {
    var description: String {
        var parts = [key, ModelProgram.origins[origin]]
        if let group { parts.append("group=\(group)") }
        if priority != 0 { parts.append("priority=\(priority)") }
        if !after.isEmpty || afterSelf { parts.append("after=\((after + (afterSelf ? ["itself"] : [])).joined(separator: ","))/\(policy)") }
        if keep { parts.append("keep") }
        if !reads.isEmpty { parts.append("reads=\(reads.joined(separator: ","))") }
        if let coalescing { parts.append("replace=\(coalescing)") }
        if wait > 0 { parts.append("wait=\(wait)s") }
        if sealed { parts.append("sealed") }
        if let maxAttempts { parts.append("attempts<=\(maxAttempts)") }
        return "(" + parts.joined(separator: " ") + ")"
    }
}

extension ModelProgram.Outcome: CustomStringConvertible {
    var description: String {
        switch self {
        case .ok(let status): "\(status)"
        case .reject(let status): "\(status)"
        case .conflict(let status, let resolver): "\(status)/\(resolver.rawValue)"
        case .busy(let status, let retryAfter): "\(status)" + (retryAfter.map { " Retry-After \($0)" } ?? "")
        case .serverError(let status): "\(status)"
        case .failed(let retryable): retryable ? "reset" : "bad certificate"
        case .networkGone: "network gone"
        case .invalid: "unsendable"
        case .interrupted: "interrupted"
        }
    }
}

extension ModelProgram.Selection: CustomStringConvertible {
    var description: String {
        var parts: [String] = []
        if !states.isEmpty { parts.append("state=" + states.map(\.rawValue).joined(separator: ",")) }
        if let group { parts.append("group=\(group)") }
        if let status { parts.append("status=\(status.lowerBound)-\(status.upperBound)") }
        if let origin { parts.append("url=\(ModelProgram.origins[origin])") }
        if let limit { parts.append("limit=\(limit)") }
        return "(" + parts.joined(separator: " ") + ")"
    }
}

/// A small, fast generator whose sequence is the same on every platform and run (SplitMix64),
/// so a seed replays a program.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension ModelProgram {
    /// A program of `length` steps for `drainers` drainers, drawn from `seed`; `reboots` when
    /// the store outlives its process (not memory).
    static func random(seed: UInt64, length: Int, drainers: Int, reboots: Bool) -> ModelProgram {
        var rng = SeededGenerator(seed: seed)
        var keys = 0
        var made: [String] = []
        var steps: [Step] = []
        // One program in four is about flow control: limits by origin from its start, entries to
        // two origins, drains and time in the small steps a bucket's tokens fall due in.
        let flowHeavy = Int.random(in: 0..<4, using: &rng) == 0
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
        // One program in four of the others is about origin health: plain entries to two
        // origins whose servers are down for most of the program's first part (so circuits open,
        // probes go and fail) and mostly up after it (so probes are delivered and circuits close),
        // with time in steps the probes fall due in.
        let healthHeavy = !flowHeavy && chance(0.25)
        var down = true
        func someKeys(_ most: Int) -> [String] {
            guard !made.isEmpty else { return [] }
            return (0..<Int.random(in: 1...most, using: &rng)).map { _ in pick(made) }
        }
        func outcome() -> Outcome {
            if healthHeavy {
                guard chance(down ? 0.85 : 0.2) else { return .ok(pick([200, 201])) }
                return pick([.serverError(500), .serverError(502), .failed(retryable: true), .busy(503, retryAfter: nil), .reject(404)])
            }
            if flowHeavy { return chance(0.8) ? .ok(200) : pick([.serverError(500), .busy(429, retryAfter: nil), .busy(503, retryAfter: 1), .networkGone]) }
            return switch Int.random(in: 0..<100, using: &rng) {
            case 0..<34: .ok(pick([200, 201, 204]))
            case 34..<42: .reject(pick([400, 404, 422]))
            case 42..<50: .conflict(pick([409, 412]), pick([.none, .leave, .drop, .fail, .send]))
            case 50..<60: .busy(pick([429, 503]), retryAfter: chance(0.6) ? pick([1, 5, 30, 7200]) : nil)
            case 60..<72: .serverError(pick([500, 502, 504]))
            case 72..<80: .failed(retryable: chance(0.85))
            case 80..<88: .networkGone
            case 88..<92: .invalid
            default: .interrupted
            }
        }
        func spec() -> Spec {
            keys += 1
            var spec = Spec(key: "e\(keys)")
            if !made.isEmpty && chance(0.05) { spec.key = pick(made) }
            // A flow program's entries are plain, to two limited origins: their buckets decide
            // what is claimed.
            if flowHeavy || healthHeavy {
                spec.origin = flowHeavy ? pick([0, 2]) : pick([0, 1])
                if healthHeavy && chance(0.2) { spec.group = pick(groups) }
                if spec.key == "e\(keys)" { made.append(spec.key) }
                return spec
            }
            if chance(0.45) { spec.group = pick(groups) }
            if chance(0.2) { spec.priority = Int.random(in: -1...2, using: &rng) }
            spec.origin = Int.random(in: 0..<origins.count, using: &rng)
            if chance(0.3) { spec.after = Array(Set(someKeys(2))).sorted() }
            if chance(0.03) { spec.afterSelf = true }
            if !spec.after.isEmpty || spec.afterSelf { spec.policy = pick([.die, .die, .wait, .proceed]) }
            if chance(0.25) { spec.keep = true }
            if !spec.after.isEmpty && chance(0.3) { spec.reads = [pick(spec.after)] }
            if chance(0.15) { spec.coalescing = pick(["k1", "k2"]) }
            if chance(0.1) { spec.wait = pick([1, 10, 120]) }
            if chance(0.15) { spec.sealed = true }
            if chance(0.1) { spec.maxAttempts = pick([1, 2, 3]) }
            if spec.key == "e\(keys)" { made.append(spec.key) }
            return spec
        }
        for index in 0..<length {
            let slot = Int.random(in: 0..<max(1, drainers), using: &rng)
            var roll = Int.random(in: 0..<1000, using: &rng)
            down = index < length * 3 / 5
            if flowHeavy {
                if index == 0 {
                    steps.append(.limits([
                        Limit(origin: origins[0], rate: pick([1, 2, 5, 10]), burst: pick([1, 2]), concurrency: nil),
                        Limit(origin: origins[2], rate: pick([1, 2, 5, 10]), burst: pick([1, 2, 3]), concurrency: chance(0.5) ? 2 : nil),
                    ]))
                    continue
                }
                // Enqueues, drains and advances only, the advances small.
                roll = [roll % 230, 230 + roll % 290, 790 + roll % 160][Int.random(in: 0..<3, using: &rng)]
            }
            // The unwell origin's circuit opens after fewer failures than the queue's 5 (so the
            // programs reach the open circuit and its probes often), and half the time its rate
            // is limited too: a probe due while its bucket is empty waits for a token.
            if healthHeavy && index == 0 {
                steps.append(.limits([Limit(origin: origins[0], rate: chance(0.5) ? pick([0.25, 0.5, 1]) : nil, burst: 1, concurrency: nil, openAfter: pick([1, 1, 2, 3]))]))
                continue
            }
            let step: Step
            switch roll {
            case 0..<230:
                step = .enqueue((0..<Int.random(in: 1...3, using: &rng)).map { _ in spec() })
            case 230..<520:
                step = .drain(Drain(
                    slot: slot, outcomes: (0..<Int.random(in: 0...4, using: &rng)).map { _ in outcome() }, limit: Int.random(in: 0...4, using: &rng),
                    lease: flowHeavy ? 300 : pick([5, 30, 300]), once: chance(0.15), reclaim: chance(0.5)
                ))
            case 520..<560: step = .settle(slot: slot, outcomes: (0..<Int.random(in: 1...3, using: &rng)).map { _ in outcome() })
            case 560..<580: step = .renew(slot: slot, lease: pick([5, 60]))
            case 580..<600: step = .wakeNetwork
            case 600..<620:
                // Rates whose tokens fall due exactly at the times the advances reach (a token
                // due at the claim's own time is the case that drifted between the stores).
                step = .limits((0..<Int.random(in: 0...2, using: &rng)).map { _ in
                    Limit(
                        origin: pick(origins + ["https://*.b.test"]), rate: chance(0.8) ? pick([0.5, 1, 2, 5, 10]) : nil, burst: pick([1, 2, 3]),
                        concurrency: chance(0.4) ? pick([1, 2]) : nil, openAfter: chance(0.25) ? pick([0, 1, 3]) : nil
                    )
                })
            case 620..<650: step = .retry(chance(0.3) ? nil : someKeys(2))
            case 650..<670: step = .purge(someKeys(2))
            case 670..<680: step = .purgeStates([pick([.delivered, .dead, .superseded, .pending, .blocked, .conflict])])
            case 680..<710:
                var selection = Selection()
                if chance(0.5) { selection.states = [pick(EntryState.allCases)] }
                if chance(0.4) { selection.group = pick(groups) }
                if chance(0.2) { selection.status = pick([400...499, 500...599, 409...409]) }
                if chance(0.2) { selection.origin = Int.random(in: 0..<origins.count, using: &rng) }
                if chance(0.2) { selection.limit = Int.random(in: 1...3, using: &rng) }
                step = .bulk(retry: chance(0.6), selection: selection, dryRun: chance(0.2))
            case 710..<730: step = .pause(chance(0.3) ? nil : pick(groups))
            case 730..<760: step = .resume(chance(0.3) ? nil : pick(groups))
            case 760..<770: step = .resumeOrigin(Int.random(in: 0..<origins.count, using: &rng))
            case 770..<780: step = .release(someKeys(2))
            case 780..<790: step = .retention(keepSeconds: pick([0, 10, 600]))
            // Time passes by amounts a little off the round ones, so that no sum of them lands
            // exactly on a lease's end or a due time, where the stores' clocks and the model's
            // may round the same instant to either side (all compare exactly there); a flow
            // program's small steps stay round, for its tokens fall due exactly at a claim, the
            // case each store counts with the same tolerance (OriginFlow.timeTolerance).
            case 790..<950:
                step = .advance(
                    flowHeavy ? pick([0.1, 0.2, 0.5, 1])
                        : healthHeavy ? pick([0.3, 0.5, 1, 2, 5, 9]) + 0.000_013_7
                        : pick([0.001, 0.1, 0.2, 0.5, 1, 3, 10, 40, 400]) + 0.000_013_7
                )
            case 950..<965: step = .stepWall(pick([-3600, -30, 30, 7200]))
            case 965..<975 where reboots: step = .reboot(gap: pick([5, 600]))
            case 975..<1000: step = .kill(slot: slot)
            default: step = .advance(1)
            }
            steps.append(step)
        }
        return ModelProgram(steps: steps)
    }
}
