import Foundation
public import HTTPCore

/// What an answer's status means for a queued entry.
public enum StatusMeaning: String, Sendable, Hashable, CaseIterable, Codable {
    /// The server took it: the entry is delivered.
    case delivered
    /// Worth another try, after the backoff (counted against the attempt budget).
    case retry
    /// The server's final word: the entry goes to the dead letters (``EntryLifecycle/DeadReason/rejected``).
    case dead
    /// The request conflicts with the server's state (an edit against an older version, say):
    /// only the app can settle it. The queue's ``QueueConflict/Resolver`` decides, or, without one,
    /// the entry waits in ``EntryState/conflict`` for an operator.
    case conflict
}

/// One rule of ``StatusRules``: the statuses it covers and what they mean.
public struct StatusRule: Sendable, Hashable {
    /// The statuses the rule covers: `404...404` for one, `500...599` for a class.
    public var statuses: ClosedRange<Int>
    /// What an answer with one of them means.
    public var meaning: StatusMeaning

    /// A rule that the statuses in `statuses` mean `meaning`.
    public init(_ statuses: ClosedRange<Int>, _ meaning: StatusMeaning) {
        self.statuses = statuses
        self.meaning = meaning
    }

    /// A rule that the one status `status` means `meaning`.
    public init(_ status: Int, _ meaning: StatusMeaning) {
        self.init(status...status, meaning)
    }
}

/// Which statuses mean delivered, retry, dead or conflict: the rules in order, the first that
/// covers a status deciding, then HTTPCore's classification (2xx delivered; 408, 425, 429 and
/// 5xx but 501 and 505 retried; the rest dead).
///
/// The queue's (``DeliveryPolicy/statuses``) hold 409 and 412 as conflicts; an entry's own
/// (``EntryDelivery/statuses``) come before them. A 425, 429 or 503 that carries `Retry-After`
/// is always a wait, whatever the rules say: the server said when to come back.
///
/// ```swift
/// // A DELETE whose target is gone already did its work.
/// var delivery = EntryDelivery()
/// delivery.statuses = [StatusRule(404, .delivered), StatusRule(410, .delivered)]
/// ```
public struct StatusRules: Sendable, Hashable {
    /// The rules in the order they are checked: the first that covers a status decides.
    public var rules: [StatusRule]

    /// Rules checked in the order given; with none, HTTPCore's classification decides every
    /// status.
    public init(_ rules: [StatusRule] = []) {
        self.rules = rules
    }

    /// 409 Conflict and 412 Precondition Failed are conflicts.
    public static let standard = StatusRules([StatusRule(409, .conflict), StatusRule(412, .conflict)])

    /// What `status` means: the first rule covering it, else HTTPCore's classification.
    public func meaning(of status: Int) -> StatusMeaning {
        for rule in rules where rule.statuses.contains(status) { return rule.meaning }
        if (200..<300).contains(status) { return .delivered }
        return StatusClassification.isRetryable(status) ? .retry : .dead
    }

    /// These rules checked before `others`.
    func before(_ others: StatusRules) -> StatusRules {
        rules.isEmpty ? others : StatusRules(rules + others.rules)
    }

    /// Whether an answer of `status` with a `Retry-After` is a wait whatever a rule says.
    static func waits(status: Int, retryAfter: Duration?) -> Bool {
        retryAfter != nil && (status == 425 || status == 429 || status == 503)
    }
}

/// An entry's own delivery policy (``EnqueueOptions/delivery``): what it sets replaces the
/// queue's (``DeliveryPolicy``) for this entry; what it leaves `nil` is the queue's.
///
/// ```swift
/// var delivery = EntryDelivery()
/// delivery.maxAttempts = 3
/// delivery.maxAge = .seconds(600)
/// delivery.statuses = [StatusRule(404, .delivered)]
/// try await queue.enqueue(request, options: EnqueueOptions(delivery: delivery))
/// ```
public struct EntryDelivery: Sendable, Hashable {
    /// Attempts that may count before the entry is dead-lettered; `0` for no limit.
    public var maxAttempts: Int?
    /// How long after enqueue (or a manual retry) it may still be sent; `.zero` for no limit.
    public var maxAge: Duration?
    /// The delay between attempts.
    public var backoff: Backoff?
    /// Rules checked before the queue's (``StatusRules``).
    public var statuses: [StatusRule]

    /// A policy that sets what is given and takes the rest from the queue's; with nothing given
    /// it changes nothing (`isEmpty`).
    public init(maxAttempts: Int? = nil, maxAge: Duration? = nil, backoff: Backoff? = nil, statuses: [StatusRule] = []) {
        self.maxAttempts = maxAttempts
        self.maxAge = maxAge
        self.backoff = backoff
        self.statuses = statuses
    }

    /// Whether it changes nothing of the queue's policy: such an entry stores none.
    public var isEmpty: Bool { maxAttempts == nil && maxAge == nil && backoff == nil && statuses.isEmpty }

    /// `policy` with this entry's settings in place of its own.
    package func applied(to policy: DeliveryPolicy) -> DeliveryPolicy {
        var policy = policy
        if let maxAttempts { policy.maxAttempts = maxAttempts > 0 ? maxAttempts : nil }
        if let maxAge { policy.maxAge = maxAge > .zero ? maxAge : nil }
        if let backoff { policy.backoff = backoff }
        policy.statuses = StatusRules(statuses).before(policy.statuses)
        return policy
    }

    /// The stored form: `attempts=3;age=600;backoff=1,2,300,1;status=404:delivered,500-599:dead`
    /// (seconds as decimals), for a row's `delivery` column.
    package var stored: String {
        var parts: [String] = []
        if let maxAttempts { parts.append("attempts=\(maxAttempts)") }
        if let maxAge { parts.append("age=\(maxAge.seconds)") }
        if let backoff { parts.append("backoff=\(backoff.base.seconds),\(backoff.multiplier),\(backoff.cap.seconds),\(backoff.jitter ? 1 : 0)") }
        if !statuses.isEmpty {
            let rules = statuses.map { rule in
                let range = rule.statuses.count == 1 ? "\(rule.statuses.lowerBound)" : "\(rule.statuses.lowerBound)-\(rule.statuses.upperBound)"
                return "\(range):\(rule.meaning.rawValue)"
            }
            parts.append("status=" + rules.joined(separator: ","))
        }
        return parts.joined(separator: ";")
    }

    /// Reads ``stored``; `nil` for text it did not write.
    package init?(stored text: String) {
        self.init()
        for part in text.split(separator: ";") {
            guard let equals = part.firstIndex(of: "=") else { return nil }
            let value = part[part.index(after: equals)...]
            switch part[..<equals] {
            case "attempts":
                guard let attempts = Int(value) else { return nil }
                maxAttempts = attempts
            case "age":
                guard let seconds = Double(value), let age = Duration.clamped(seconds: seconds) else { return nil }
                maxAge = age
            case "backoff":
                let numbers = value.split(separator: ",").compactMap { Double($0) }
                guard numbers.count == 4, let base = Duration.clamped(seconds: numbers[0]), let cap = Duration.clamped(seconds: numbers[2]) else { return nil }
                backoff = Backoff(base: base, multiplier: numbers[1], cap: cap, jitter: numbers[3] != 0)
            case "status":
                for rule in value.split(separator: ",") {
                    guard let colon = rule.firstIndex(of: ":"), let meaning = StatusMeaning(rawValue: String(rule[rule.index(after: colon)...])) else { return nil }
                    let bounds = rule[..<colon].split(separator: "-").compactMap { Int($0) }
                    guard (1...2).contains(bounds.count), bounds[0] <= bounds[bounds.count - 1] else { return nil }
                    statuses.append(StatusRule(bounds[0]...bounds[bounds.count - 1], meaning))
                }
            default:
                return nil
            }
        }
    }

    /// Checked at enqueue: statuses within 100...599, attempts and age not negative, a backoff
    /// that grows.
    package func checked() throws(QueueError) -> EntryDelivery {
        if let maxAttempts, maxAttempts < 0 { throw .invalidRequest("a delivery policy's maxAttempts is 0 (no limit) or more, not \(maxAttempts)") }
        if let maxAge, maxAge < .zero { throw .invalidRequest("a delivery policy's maxAge is not negative") }
        if let backoff, backoff.base <= .zero || backoff.cap < backoff.base || backoff.multiplier < 1 || !backoff.multiplier.isFinite {
            throw .invalidRequest("a delivery policy's backoff starts above zero, grows by 1 or more, and has a cap not below its base")
        }
        for rule in statuses where rule.statuses.lowerBound < 100 || rule.statuses.upperBound > 599 {
            throw .invalidRequest("a status rule covers statuses within 100...599, not \(rule.statuses)")
        }
        return self
    }
}
