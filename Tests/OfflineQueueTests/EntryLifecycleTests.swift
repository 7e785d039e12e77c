import Foundation
import HTTPCore
import OfflineQueue
import Testing

/// The pure state machine, with no clock, randomness or I/O.
@Suite("Entry lifecycle: the pure transitions")
struct EntryLifecycleTests {
    let policy = DeliveryPolicy(backoff: Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(60)), maxAttempts: 4, maxAge: .seconds(3600))

    func next(_ outcome: AttemptOutcome, attempts: Int = 0, age seconds: Double = 10, random: Double = 0.5) -> Transition {
        EntryLifecycle.transition(after: outcome, attempts: attempts, age: .seconds(seconds), policy: policy, unitRandom: random)
    }

    @Test("2xx delivers")
    func delivered() {
        #expect(next(.delivered(status: 201)) == .deliver(status: 201))
    }

    @Test("408, 429 and 5xx retry with full jitter under the exponential ceiling", arguments: [408, 429, 500, 502, 503, 599])
    func retryableStatuses(status: Int) {
        // Third attempt (2 counted before): ceiling base × 2² = 4 s; random 0.5 → 2 s.
        let transition = next(.rejected(status: status, retryAfter: nil, excerpt: "busy"), attempts: 2)
        guard case .retry(let delay, let consumes, let waiting, let seen, _, let excerpt) = transition else {
            Issue.record("expected a retry, got \(transition)")
            return
        }
        #expect(delay == .seconds(2))
        #expect(consumes)
        #expect(!waiting)
        #expect(seen == status)
        #expect(excerpt == "busy")
    }

    @Test("jitter spans zero to the ceiling, and the ceiling stops at the cap")
    func jitterBounds() {
        for (attempts, random, expected) in [(0, 0.0, 0.0), (0, 0.999, 0.999), (1, 1.0, 2.0)] {
            let transition = next(.failed(message: "reset", retryable: true), attempts: attempts, random: random)
            guard case .retry(let delay, _, _, _, _, _) = transition else { Issue.record("\(transition)"); continue }
            #expect(abs(delay.seconds - expected) < 0.001)
        }
        let capped = EntryLifecycle.transition(
            after: .failed(message: "reset", retryable: true), attempts: 20, age: .zero,
            policy: DeliveryPolicy(backoff: Backoff(base: .seconds(30), cap: .seconds(60))), unitRandom: 1
        )
        guard case .retry(let delay, _, _, _, _, _) = capped else { Issue.record("\(capped)"); return }
        #expect(delay == .seconds(60))
    }

    @Test("Retry-After lengthens the backoff, up to the policy's limit; a shorter one (even 0) does not cut it short")
    func retryAfter() {
        guard case .retry(let delay, _, _, _, _, _) = next(.rejected(status: 503, retryAfter: .seconds(120), excerpt: nil)) else {
            Issue.record("expected a retry")
            return
        }
        #expect(delay == .seconds(120))
        let short = DeliveryPolicy(backoff: Backoff(base: .seconds(1), cap: .seconds(60), jitter: false), maxRetryAfter: .seconds(5))
        let capped = EntryLifecycle.transition(after: .rejected(status: 429, retryAfter: .seconds(999), excerpt: nil), attempts: 0, age: .zero, policy: short, unitRandom: 0)
        guard case .retry(let cappedDelay, _, _, _, _, _) = capped else { Issue.record("\(capped)"); return }
        #expect(cappedDelay == .seconds(5))
        // Retry-After: 0 on the fifth attempt: the backoff (16 s without jitter) still applies.
        let zero = EntryLifecycle.transition(after: .rejected(status: 503, retryAfter: .zero, excerpt: nil), attempts: 4, age: .zero, policy: short, unitRandom: 0)
        guard case .retry(let zeroDelay, _, _, _, _, _) = zero else { Issue.record("\(zero)"); return }
        #expect(zeroDelay == .seconds(16))
    }

    @Test("other 4xx go to dead letters with the status and the body excerpt", arguments: [400, 401, 403, 404, 409, 422])
    func rejected(status: Int) {
        #expect(next(.rejected(status: status, retryAfter: nil, excerpt: "{\"error\":\"bad\"}"))
            == .deadLetter(.rejected, status: status, error: "HTTP \(status)", excerpt: "{\"error\":\"bad\"}"))
    }

    @Test("with maxAttempts set, the last attempt of the budget dead-letters instead of retrying")
    func budget() {
        guard case .retry = next(.rejected(status: 500, retryAfter: nil, excerpt: nil), attempts: 2) else { Issue.record("3rd should retry"); return }
        guard case .deadLetter(.attemptsExhausted, 500, _, _) = next(.rejected(status: 500, retryAfter: nil, excerpt: nil), attempts: 3) else {
            Issue.record("4th of 4 should dead-letter")
            return
        }
    }

    @Test("the default policy has no attempt limit: a day of 503s, attempt after attempt, leaves the entry pending")
    func defaultPolicySurvivesLongOutages() {
        let policy = DeliveryPolicy()
        #expect(policy.maxAttempts == nil)
        var age = Duration.zero
        var attempts = 0
        var random = SystemRandomNumberGenerator()
        while age < .seconds(24 * 3600) {
            let transition = EntryLifecycle.transition(
                after: .rejected(status: 503, retryAfter: nil, excerpt: nil), attempts: attempts, age: age,
                policy: policy, unitRandom: Double.random(in: 0..<1, using: &random)
            )
            guard case .retry(let delay, true, false, 503, _, _) = transition else {
                Issue.record("attempt \(attempts + 1) at \(age): \(transition)")
                return
            }
            #expect(delay <= policy.backoff.cap)
            attempts += 1
            age += delay + .seconds(1)
        }
        #expect(attempts > 100, "a day of capped backoff is hundreds of attempts, not ten")
    }

    @Test("the network being gone does not count, and waits for the network")
    func networkGone() {
        guard case .retry(let delay, let consumes, let waiting, nil, _, nil) = next(.networkGone(message: "no route"), attempts: 3) else {
            Issue.record("expected a wait")
            return
        }
        #expect(!consumes)
        #expect(waiting)
        #expect(delay == policy.networkRecheck)
    }

    @Test("entries older than the maximum age are not sent, and die when they fail")
    func maxAge() {
        #expect(EntryLifecycle.admit(age: .seconds(3599), policy: policy) == nil)
        guard case .deadLetter(.expired, nil, _, nil) = EntryLifecycle.admit(age: .seconds(3600), policy: policy) else {
            Issue.record("expected expiry")
            return
        }
        guard case .deadLetter(.expired, 503, _, _) = next(.rejected(status: 503, retryAfter: nil, excerpt: nil), age: 4000) else {
            Issue.record("expected expiry after a failure")
            return
        }
        guard case .deadLetter(.expired, _, _, _) = next(.networkGone(message: "offline"), age: 4000) else {
            Issue.record("expected expiry while offline")
            return
        }
    }

    @Test("an interrupted attempt is released; unsendable and non-retryable failures die")
    func interruptedAndUnsendable() {
        #expect(next(.interrupted, attempts: 3) == .release)
        guard case .deadLetter(.unsendable, nil, let error, nil) = next(.invalid(message: "body file missing")) else {
            Issue.record("expected unsendable")
            return
        }
        #expect(error == "body file missing")
        guard case .deadLetter(.unsendable, _, _, _) = next(.failed(message: "tls: untrusted", retryable: false)) else {
            Issue.record("expected unsendable")
            return
        }
    }
}
