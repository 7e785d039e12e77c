import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing

/// The pure state machine, with no clock, randomness or I/O.
@Suite("Entry lifecycle: the pure transitions")
struct EntryLifecycleTests {
    let policy = DeliveryPolicy(backoff: Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(60)), maxAttempts: 4, maxAge: .seconds(3600))

    func next(_ outcome: EntryLifecycle.AttemptOutcome, attempts: Int = 0, age seconds: Double = 10, random: Double = 0.5) -> EntryLifecycle.Transition {
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
        guard case .retry(let retry) = transition else {
            Issue.record("expected a retry, got \(transition)")
            return
        }
        #expect(retry.after == .seconds(2))
        #expect(retry.consumesAttempt)
        #expect(!retry.waitingForNetwork)
        #expect(retry.status == status)
        #expect(retry.excerpt == "busy")
    }

    @Test("jitter spans zero to the ceiling, and the ceiling stops at the cap")
    func jitterBounds() {
        for (attempts, random, expected) in [(0, 0.0, 0.0), (0, 0.999, 0.999), (1, 1.0, 2.0)] {
            let transition = next(.failed(message: "reset", retryable: true), attempts: attempts, random: random)
            guard case .retry(let retry) = transition else { Issue.record("\(transition)"); continue }
            #expect(abs(retry.after.seconds - expected) < 0.001)
        }
        let capped = EntryLifecycle.transition(
            after: .failed(message: "reset", retryable: true), attempts: 20, age: .zero,
            policy: DeliveryPolicy(backoff: Backoff(base: .seconds(30), cap: .seconds(60))), unitRandom: 1
        )
        guard case .retry(let retry) = capped else { Issue.record("\(capped)"); return }
        #expect(retry.after == .seconds(60))
    }

    @Test("Retry-After lengthens the backoff, up to the policy's limit; a shorter one (even 0) does not cut it short")
    func retryAfter() {
        guard case .retry(let retry) = next(.rejected(status: 503, retryAfter: .seconds(120), excerpt: nil)) else {
            Issue.record("expected a retry")
            return
        }
        #expect(retry.after == .seconds(120))
        let short = DeliveryPolicy(backoff: Backoff(base: .seconds(1), cap: .seconds(60), jitter: false), maxRetryAfter: .seconds(5))
        let capped = EntryLifecycle.transition(after: .rejected(status: 429, retryAfter: .seconds(999), excerpt: nil), attempts: 0, age: .zero, policy: short, unitRandom: 0)
        guard case .retry(let cappedRetry) = capped else { Issue.record("\(capped)"); return }
        #expect(cappedRetry.after == .seconds(5))
        // Retry-After: 0 on the fifth attempt: the backoff (16 s without jitter) still applies.
        let zero = EntryLifecycle.transition(after: .rejected(status: 503, retryAfter: .zero, excerpt: nil), attempts: 4, age: .zero, policy: short, unitRandom: 0)
        guard case .retry(let zeroRetry) = zero else { Issue.record("\(zero)"); return }
        #expect(zeroRetry.after == .seconds(16))
    }

    @Test("one table of retryable statuses: 408, 425, 429 and 5xx but 501 and 505, for the queue, the retry policy and NetworkError")
    func oneRetryableTable() {
        for status in [408, 425, 429, 500, 502, 503, 504, 599] {
            #expect(StatusClassification.isRetryable(status) && EntryLifecycle.isRetryable(status: status), "\(status)")
        }
        for status in [200, 301, 400, 404, 409, 501, 505] {
            #expect(!StatusClassification.isRetryable(status) && !EntryLifecycle.isRetryable(status: status), "\(status)")
        }
        #expect(RetryPolicy.exponential().retryableStatuses == StatusClassification.retryableStatuses)
        #expect(StatusClassification.retryableStatuses.contains(425) && !StatusClassification.retryableStatuses.contains(501))
        guard case .deadLetter(let dead) = next(.rejected(status: 501, retryAfter: nil, excerpt: nil)) else {
            Issue.record("501 is the server's final word")
            return
        }
        #expect(dead.reason == .rejected)
    }

    @Test("other 4xx go to dead letters with the status and the body excerpt", arguments: [400, 401, 403, 404, 410, 422])
    func rejected(status: Int) {
        #expect(next(.rejected(status: status, retryAfter: nil, excerpt: "{\"error\":\"bad\"}"))
            == .deadLetter(.init(.rejected, status: status, error: "HTTP \(status)", excerpt: "{\"error\":\"bad\"}")))
    }

    @Test("with maxAttempts set, the last attempt of the budget dead-letters instead of retrying")
    func budget() {
        guard case .retry = next(.rejected(status: 500, retryAfter: nil, excerpt: nil), attempts: 2) else { Issue.record("3rd should retry"); return }
        guard case .deadLetter(let dead) = next(.rejected(status: 500, retryAfter: nil, excerpt: nil), attempts: 3) else {
            Issue.record("4th of 4 should dead-letter")
            return
        }
        #expect(dead.reason == .attemptsExhausted && dead.status == 500 && dead.consumesAttempt)
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
            guard case .retry(let retry) = transition, retry.consumesAttempt, !retry.waitingForNetwork, retry.status == 503 else {
                Issue.record("attempt \(attempts + 1) at \(age): \(transition)")
                return
            }
            let delay = retry.after
            #expect(delay <= policy.backoff.cap)
            attempts += 1
            age += delay + .seconds(1)
        }
        #expect(attempts > 100, "a day of capped backoff is hundreds of attempts, not ten")
    }

    @Test("the network being gone does not count, and waits for the network")
    func networkGone() {
        guard case .retry(let retry) = next(.networkGone(message: "no route"), attempts: 3), retry.status == nil, retry.excerpt == nil else {
            Issue.record("expected a wait")
            return
        }
        #expect(!retry.consumesAttempt)
        #expect(retry.waitingForNetwork)
        #expect(retry.after == policy.networkRecheck)
    }

    @Test("entries older than the maximum age are not sent, and die when they fail")
    func maxAge() {
        #expect(EntryLifecycle.admit(age: .seconds(3599), policy: policy) == nil)
        guard case .deadLetter(let unsent) = EntryLifecycle.admit(age: .seconds(3600), policy: policy),
              unsent.reason == .expired, unsent.status == nil, unsent.excerpt == nil else {
            Issue.record("expected expiry")
            return
        }
        #expect(!unsent.consumesAttempt, "an entry that expired unsent used no attempt")
        guard case .deadLetter(let failed) = next(.rejected(status: 503, retryAfter: nil, excerpt: nil), age: 4000),
              failed.reason == .expired, failed.status == 503 else {
            Issue.record("expected expiry after a failure")
            return
        }
        #expect(failed.consumesAttempt, "the attempt that failed counts")
        guard case .deadLetter(let offline) = next(.networkGone(message: "offline"), age: 4000), offline.reason == .expired else {
            Issue.record("expected expiry while offline")
            return
        }
        #expect(!offline.consumesAttempt)
    }

    @Test("an interrupted attempt is released; unsendable and non-retryable failures die")
    func interruptedAndUnsendable() {
        #expect(next(.interrupted, attempts: 3) == .release)
        guard case .deadLetter(let dead) = next(.invalid(message: "body file missing")),
              dead.reason == .unsendable, dead.status == nil, dead.excerpt == nil else {
            Issue.record("expected unsendable")
            return
        }
        #expect(dead.error == "body file missing")
        guard case .deadLetter(let tls) = next(.failed(message: "tls: untrusted", retryable: false)), tls.reason == .unsendable else {
            Issue.record("expected unsendable")
            return
        }
    }
}
