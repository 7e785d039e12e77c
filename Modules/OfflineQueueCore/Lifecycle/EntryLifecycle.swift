import Foundation
import HTTPCore

extension EntryLifecycle {
    /// How one attempt to send an entry ended, as the drain engine saw it.
    public enum AttemptOutcome: Sendable, Hashable {
        /// The server answered with an accepted status.
        case delivered(status: Int)
        /// The server answered with a status that is not accepted.
        case rejected(status: Int, retryAfter: Duration?, excerpt: String?)
        /// The exchange failed below HTTP (reset, timeout, garbage); `retryable` is false for
        /// failures that repeating will not cure (an untrusted certificate).
        case failed(message: String, retryable: Bool)
        /// The request could not be sent because the network is gone; nothing reached a server.
        case networkGone(message: String)
        /// The request could not even be built (a body file vanished, a header template names a
        /// missing variable). Repeating will not help.
        case invalid(message: String)
        /// The drainer stopped (shutdown, cancellation) before the attempt ended.
        case interrupted
    }
}

extension EntryLifecycle {
    /// What happens to an entry next. Produced by ``EntryLifecycle``; applied by the store as it
    /// is: the store infers nothing.
    public enum Transition: Sendable, Hashable {
        /// Mark delivered (the attempt counts).
        case deliver(status: Int)
        /// Back to pending, due again later.
        case retry(Retry)
        /// Give up.
        case deadLetter(DeadLetter)
        /// Back to pending, due now, nothing counted (the drainer stopped).
        case release
        /// The answer conflicts with the server's state and nothing settled it: the entry waits
        /// in ``EntryState/conflict`` for an operator (the attempt counts).
        case conflict(Conflict)
        /// The app's ``QueueConflict/Resolver`` dropped it: ``EntryState/superseded``, never sent again.
        case drop(Conflict)

        /// A conflict as recorded: the status and the start of the server's answer.
        public struct Conflict: Sendable, Hashable {
            /// The status the server answered (409 or 412 unless the rules say otherwise).
            public var status: Int
            /// The failure in words (`HTTP 409`), kept as the entry's `lastError`.
            public var error: String
            /// The start of the server's answer, secrets redacted; `nil` when none was kept.
            public var excerpt: String?

            /// A conflict answered with `status`, as it is recorded.
            public init(status: Int, error: String, excerpt: String? = nil) {
                self.status = status
                self.error = error
                self.excerpt = excerpt
            }
        }

        /// A failed attempt tried again later.
        public struct Retry: Sendable, Hashable {
            /// The wait before the entry is due again.
            public var after: Duration
            /// Whether the attempt counts against the budget (not when the network was gone).
            public var consumesAttempt: Bool
            /// Whether the entry waits for the network to come back (then it is due at once).
            public var waitingForNetwork: Bool
            /// The status the server answered, if it answered.
            public var status: Int?
            /// The failure in words (`HTTP 503`, or the transport's message), kept as the entry's
            /// `lastError`.
            public var error: String
            /// The start of the error response's body, secrets redacted.
            public var excerpt: String?
            /// How long the answer's `Retry-After` pauses the whole origin (a 429 or 503 that
            /// carries one; ``FlowControl``), `nil` for every other answer.
            public var originPause: Duration?

            /// A retry due after `after`; unless told otherwise it counts against the budget and does
            /// not wait for the network.
            public init(
                after: Duration, consumesAttempt: Bool = true, waitingForNetwork: Bool = false, status: Int? = nil, error: String,
                excerpt: String? = nil, originPause: Duration? = nil
            ) {
                self.originPause = originPause
                self.after = after
                self.consumesAttempt = consumesAttempt
                self.waitingForNetwork = waitingForNetwork
                self.status = status
                self.error = error
                self.excerpt = excerpt
            }
        }

        /// An entry given up on.
        public struct DeadLetter: Sendable, Hashable {
            /// Why the entry is given up on.
            public var reason: EntryLifecycle.DeadReason
            /// Whether this ends an attempt that counts (not for an entry that expired unsent).
            public var consumesAttempt: Bool
            /// The status the server answered, if it answered.
            public var status: Int?
            /// The failure in words, kept as the entry's `lastError`.
            public var error: String
            /// The start of the error response's body, secrets redacted.
            public var excerpt: String?

            /// An entry given up on for `reason`; unless told otherwise it ends an attempt that counts.
            public init(_ reason: EntryLifecycle.DeadReason, consumesAttempt: Bool = true, status: Int? = nil, error: String, excerpt: String? = nil) {
                self.reason = reason
                self.consumesAttempt = consumesAttempt
                self.status = status
                self.error = error
                self.excerpt = excerpt
            }
        }
    }
}

extension EntryLifecycle {
    /// Why an entry went to dead letters.
    public enum DeadReason: String, Sendable, Hashable, Codable {
        /// The server answered with a status that retrying will not change (most 4xx).
        case rejected
        /// The attempt budget (``DeliveryPolicy/maxAttempts``, when set) ran out.
        case attemptsExhausted
        /// The entry outlived ``DeliveryPolicy/maxAge``.
        case expired
        /// The request could not be sent as stored, or failed in a way retrying will not cure.
        case unsendable
        /// An entry it waited for (``EnqueueOptions/after``) died or was purged unsent, and its
        /// ``ParentDeathPolicy`` said to die with it. Never sent.
        case parentDead
        /// The server answered with a conflict (``StatusMeaning/conflict``) and the app's
        /// ``QueueConflict/Resolver`` let it die.
        case conflict
    }
}

/// The entry lifecycle as pure functions: no clock, no randomness, no I/O.
///
/// ```
///            enqueue
///               │
///               ▼        claim (lease)        ┌──────────────┐
///   ┌──────► pending ───────────────────► inflight ──2xx──► delivered
///   │           ▲ ▲                           │
///   │  release  │ └── retry (backoff, or ─────┤
///   │  / lease  │     waiting for network)    │
///   │  expired  │                             └──4xx, budget, age──► dead
///   └───────────┴──────── manual retry ◄─────────────────────────────┘
///
///   enqueue --after P ──► blocked ──P delivered──► pending
///                            └──────P dead (policy: die)──► dead (parentDead)
///
///   inflight ──409/412──► the app's ConflictResolver ──new request──► pending (in place)
///                                │      └──drop──► superseded   └──fail──► dead (conflict)
///                                └──none, or leave──► conflict ──operator retry──► pending
/// ```
public enum EntryLifecycle {
    /// Whether an entry `age` old (on the boot clock, since its budget started) may still be
    /// sent: checked before sending, so an expired entry is never sent.
    public static func admit(age: Duration, policy: DeliveryPolicy) -> EntryLifecycle.Transition? {
        guard let maxAge = policy.maxAge, age >= maxAge else { return nil }
        return .deadLetter(.init(.expired, consumesAttempt: false, error: "\(expiredMessage(maxAge)); not sent"))
    }

    /// The next step after an attempt.
    ///
    /// - Parameters:
    ///   - outcome: how the attempt ended.
    ///   - attempts: attempts counted before this one.
    ///   - age: how long since the entry's budget started, on the boot clock.
    ///   - policy: the entry's delivery policy: its backoff, attempts and age.
    ///   - unitRandom: a value in `0..<1` for the backoff's jitter.
    public static func transition(
        after outcome: EntryLifecycle.AttemptOutcome,
        attempts: Int,
        age: Duration,
        policy: DeliveryPolicy,
        unitRandom: Double
    ) -> EntryLifecycle.Transition {
        switch outcome {
        case .delivered(let status):
            // A 2xx means delivered unless a rule says otherwise; then it is read as any answer.
            guard policy.statuses.rules.contains(where: { $0.statuses.contains(status) }) else { return .deliver(status: status) }
            return transition(after: .rejected(status: status, retryAfter: nil, excerpt: nil), attempts: attempts, age: age,
                              policy: policy, unitRandom: unitRandom)

        case .interrupted:
            return .release

        case .invalid(let message):
            return .deadLetter(.init(.unsendable, error: message))

        case .networkGone(let message):
            if let expired = admit(age: age, policy: policy) { return expired }
            return .retry(.init(after: policy.networkRecheck, consumesAttempt: false, waitingForNetwork: true, error: message))

        case .rejected(let status, let retryAfter, let excerpt):
            let error = "HTTP \(status)"
            if StatusRules.waits(status: status, retryAfter: retryAfter) {
                // The server said when to come back: a wait, never a conflict or a death, and
                // not an attempt spent (the age limit still holds).
                if let expired = admit(age: age, policy: policy) { return expired }
                let delay = retryDelay(counted: attempts + 1, retryAfter: retryAfter, policy: policy, unitRandom: unitRandom)
                // A 429 or 503 speaks for the origin: every drainer waits for it (`FlowControl`).
                let pause = status == 425 ? nil : retryAfter.map { min($0, policy.maxRetryAfter) }
                return .retry(.init(after: delay, consumesAttempt: false, status: status, error: error, excerpt: excerpt, originPause: pause))
            }
            switch policy.statuses.meaning(of: status) {
            case .delivered:
                return .deliver(status: status)
            case .conflict:
                return .conflict(.init(status: status, error: error, excerpt: excerpt))
            case .dead:
                return .deadLetter(.init(.rejected, status: status, error: error, excerpt: excerpt))
            case .retry:
                return retryOrGiveUp(attempts: attempts, age: age, policy: policy, unitRandom: unitRandom,
                                     retryAfter: retryAfter, status: status, error: error, excerpt: excerpt)
            }

        case .failed(let message, let retryable):
            guard retryable else { return .deadLetter(.init(.unsendable, error: message)) }
            return retryOrGiveUp(attempts: attempts, age: age, policy: policy, unitRandom: unitRandom,
                                 retryAfter: nil, status: nil, error: message, excerpt: nil)
        }
    }

    /// Whether `status` is worth another try: HTTPCore's one table,
    /// `StatusClassification.isRetryable(_:)` (408, 425, 429, and 5xx but 501 and 505); other
    /// statuses are the server's final word.
    public static func isRetryable(status: Int) -> Bool {
        StatusClassification.isRetryable(status)
    }

    /// The wait before retry number `counted`: the backoff, or the server's `Retry-After` when
    /// that is longer (up to ``DeliveryPolicy/maxRetryAfter``). A `Retry-After` shorter than the
    /// backoff (`0`, say) does not cut the backoff short, so a server cannot make the queue spin.
    public static func retryDelay(counted: Int, retryAfter: Duration?, policy: DeliveryPolicy, unitRandom: Double) -> Duration {
        let backoff = policy.backoff.delay(forRetry: counted, unitRandom: unitRandom)
        guard let retryAfter else { return backoff }
        return max(backoff, min(retryAfter, policy.maxRetryAfter))
    }

    private static func retryOrGiveUp(
        attempts: Int, age: Duration, policy: DeliveryPolicy, unitRandom: Double,
        retryAfter: Duration?, status: Int?, error: String, excerpt: String?
    ) -> EntryLifecycle.Transition {
        let counted = attempts + 1
        if let maxAttempts = policy.maxAttempts, counted >= maxAttempts {
            return .deadLetter(.init(.attemptsExhausted, status: status, error: "\(error); gave up after \(counted) attempts", excerpt: excerpt))
        }
        if let maxAge = policy.maxAge, age >= maxAge {
            return .deadLetter(.init(.expired, status: status, error: "\(error); \(expiredMessage(maxAge))", excerpt: excerpt))
        }
        let delay = retryDelay(counted: counted, retryAfter: retryAfter, policy: policy, unitRandom: unitRandom)
        return .retry(.init(after: delay, status: status, error: error, excerpt: excerpt))
    }

    private static func expiredMessage(_ maxAge: Duration) -> String {
        "older than the maximum age of \(maxAge.components.seconds) s"
    }
}

extension EntryLifecycle {
    /// The transition of a probe whose `outcome` says the server is still unwell (an answer
    /// ``OriginHealth/isUnwell(status:)`` names, or a failure below HTTP that `unwell` names):
    /// a retry that does not count, due at once (the open circuit holds it until the next
    /// probe); `nil` for any other outcome, which settles as ever.
    package static func probeFailed(_ outcome: EntryLifecycle.AttemptOutcome, unwell: String?) -> EntryLifecycle.Transition? {
        switch outcome {
        case .rejected(let status, _, let excerpt) where OriginHealth.isUnwell(status: status):
            return .retry(EntryLifecycle.Transition.Retry(after: .zero, consumesAttempt: false, status: status, error: "HTTP \(status)", excerpt: excerpt))
        case .failed(let message, _) where unwell != nil:
            return .retry(EntryLifecycle.Transition.Retry(after: .zero, consumesAttempt: false, error: message))
        default:
            return nil
        }
    }
}
