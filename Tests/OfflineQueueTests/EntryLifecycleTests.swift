import Foundation
import HTTPCore
import OfflineQueue
import Testing

/// The pure state machine, with no clock, randomness or I/O.
@Suite("Entry lifecycle: the pure transitions")
struct EntryLifecycleTests {
    let start = Date(timeIntervalSince1970: 1_700_000_000)
    let policy = DeliveryPolicy(backoff: Backoff(base: .seconds(1), multiplier: 2, cap: .seconds(60)), maxAttempts: 4, maxAge: .seconds(3600))

    func next(_ outcome: AttemptOutcome, attempts: Int = 0, after seconds: Double = 10, random: Double = 0.5) -> Transition {
        EntryLifecycle.transition(after: outcome, attempts: attempts, budgetStartedAt: start, now: start.addingTimeInterval(seconds), policy: policy, unitRandom: random)
    }

    @Test("2xx delivers")
    func delivered() {
        #expect(next(.delivered(status: 201)) == .deliver(status: 201))
    }

    @Test("408, 429 and 5xx retry with full jitter under the exponential ceiling", arguments: [408, 429, 500, 502, 503, 599])
    func retryableStatuses(status: Int) {
        // Third attempt (2 counted before): ceiling base × 2² = 4 s; random 0.5 → 2 s.
        let transition = next(.rejected(status: status, retryAfter: nil, excerpt: "busy"), attempts: 2)
        guard case .retry(let at, let consumes, let waiting, let seen, _, let excerpt) = transition else {
            Issue.record("expected a retry, got \(transition)")
            return
        }
        #expect(at == start.addingTimeInterval(10 + 2))
        #expect(consumes)
        #expect(!waiting)
        #expect(seen == status)
        #expect(excerpt == "busy")
    }

    @Test("jitter spans zero to the ceiling, and the ceiling stops at the cap")
    func jitterBounds() {
        for (attempts, random, expected) in [(0, 0.0, 0.0), (0, 0.999, 0.999), (1, 1.0, 2.0), (20, 1.0, 60.0)] {
            let transition = next(.failed(message: "reset", retryable: true), attempts: min(attempts, 2), random: random)
            if attempts == 20 {
                let capped = EntryLifecycle.transition(
                    after: .failed(message: "reset", retryable: true), attempts: 2, budgetStartedAt: start, now: start,
                    policy: DeliveryPolicy(backoff: Backoff(base: .seconds(30), cap: .seconds(60)), maxAttempts: 50), unitRandom: 1
                )
                guard case .retry(let at, _, _, _, _, _) = capped else { Issue.record("\(capped)"); continue }
                #expect(at == start.addingTimeInterval(expected))
                continue
            }
            guard case .retry(let at, _, _, _, _, _) = transition else { Issue.record("\(transition)"); continue }
            #expect(abs(at.timeIntervalSince(start.addingTimeInterval(10)) - expected) < 0.001)
        }
    }

    @Test("Retry-After replaces the backoff, up to the policy's limit")
    func retryAfter() {
        guard case .retry(let at, _, _, _, _, _) = next(.rejected(status: 503, retryAfter: .seconds(120), excerpt: nil)) else {
            Issue.record("expected a retry")
            return
        }
        #expect(at == start.addingTimeInterval(130))
        let short = DeliveryPolicy(maxRetryAfter: .seconds(5))
        let capped = EntryLifecycle.transition(after: .rejected(status: 429, retryAfter: .seconds(999), excerpt: nil), attempts: 0, budgetStartedAt: start, now: start, policy: short, unitRandom: 0)
        guard case .retry(let cappedAt, _, _, _, _, _) = capped else { Issue.record("\(capped)"); return }
        #expect(cappedAt == start.addingTimeInterval(5))
    }

    @Test("other 4xx go to dead letters with the status and the body excerpt", arguments: [400, 401, 403, 404, 409, 422])
    func rejected(status: Int) {
        #expect(next(.rejected(status: status, retryAfter: nil, excerpt: "{\"error\":\"bad\"}"))
            == .deadLetter(.rejected, status: status, error: "HTTP \(status)", excerpt: "{\"error\":\"bad\"}"))
    }

    @Test("the last attempt of the budget dead-letters instead of retrying")
    func budget() {
        guard case .retry = next(.rejected(status: 500, retryAfter: nil, excerpt: nil), attempts: 2) else { Issue.record("3rd should retry"); return }
        guard case .deadLetter(.attemptsExhausted, 500, _, _) = next(.rejected(status: 500, retryAfter: nil, excerpt: nil), attempts: 3) else {
            Issue.record("4th of 4 should dead-letter")
            return
        }
    }

    @Test("the network being gone does not count, and waits for the network")
    func networkGone() {
        guard case .retry(let at, let consumes, let waiting, nil, _, nil) = next(.networkGone(message: "no route"), attempts: 3) else {
            Issue.record("expected a wait")
            return
        }
        #expect(!consumes)
        #expect(waiting)
        #expect(at == start.addingTimeInterval(10 + policy.networkRecheck.seconds))
    }

    @Test("entries older than the maximum age are not sent, and die when they fail")
    func maxAge() {
        #expect(EntryLifecycle.admit(budgetStartedAt: start, now: start.addingTimeInterval(3599), policy: policy) == nil)
        guard case .deadLetter(.expired, nil, _, nil) = EntryLifecycle.admit(budgetStartedAt: start, now: start.addingTimeInterval(3600), policy: policy) else {
            Issue.record("expected expiry")
            return
        }
        guard case .deadLetter(.expired, 503, _, _) = next(.rejected(status: 503, retryAfter: nil, excerpt: nil), after: 4000) else {
            Issue.record("expected expiry after a failure")
            return
        }
        guard case .deadLetter(.expired, _, _, _) = next(.networkGone(message: "offline"), after: 4000) else {
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
