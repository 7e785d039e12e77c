import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import TestSupport
import Testing

@Suite struct RetryTests {
    @Test func backoffGrowsExponentiallyUpToTheCap() {
        let backoff = Backoff(base: .milliseconds(100), multiplier: 2, cap: .seconds(1), jitter: false)
        #expect((1...6).map { backoff.delay(forRetry: $0, unitRandom: 0.5) } ==
            [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
    }

    @Test func fullJitterStaysBelowTheCeiling() {
        let backoff = Backoff(base: .milliseconds(100), cap: .seconds(10))
        var generator = SeededGenerator(seed: 7)
        for retry in 1...20 {
            let delay = backoff.delay(forRetry: retry, unitRandom: Double.random(in: 0..<1, using: &generator))
            #expect(delay >= .zero && delay <= backoff.ceiling(forRetry: retry))
        }
        #expect(backoff.delay(forRetry: 3, unitRandom: 0) == .zero)
    }

    @Test func retryAfterInSecondsAndAsHTTPDate() {
        let now = Date(timeIntervalSince1970: 784_111_777) // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.delay(from: "120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(from: "Sun, 06 Nov 1994 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.delay(from: "Sunday, 06-Nov-94 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.delay(from: "Sun Nov  6 08:50:07 1994", now: now) == .seconds(30))
        #expect(RetryAfter.delay(from: "Sat, 05 Nov 1994 08:49:37 GMT", now: now) == .zero)
        #expect(RetryAfter.delay(from: "soon", now: now) == nil)
        #expect(HTTPDate.format(now) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test("a Retry-After far in the future, and durations from any Double, are clamped, never trapped on")
    func outOfRangeDurations() {
        let now = Date(timeIntervalSince1970: 784_111_777)
        #expect(RetryAfter.delay(from: "9223372036854775807", now: now) == .longestInput)
        #expect(RetryAfter.delay(from: "99999999999999999999999", now: now) == nil)
        if let date = HTTPDate.parse("Fri, 31 Dec 9999999 23:59:59 GMT") {
            #expect(RetryAfter.delay(from: HTTPDate.format(date), now: now).map { $0 <= .longestInput } ?? true)
        }
        #expect(Duration.clamped(seconds: .infinity) == nil)
        #expect(Duration.clamped(seconds: .nan) == nil)
        #expect(Duration.clamped(seconds: 1e300) == .longestInput)
        #expect(Duration.clamped(seconds: -5) == .zero)
        #expect(Duration.clamped(seconds: 1.5) == .milliseconds(1500))
        #expect(Duration.seconds(Int64.max).saturatingMilliseconds == .max)
        #expect(Duration.seconds(Int64.min).saturatingMilliseconds == .min)
        #expect(Duration.milliseconds(2500).saturatingMilliseconds == 2500)
    }

    @Test func retryableStatusesAreRetriedWithBackoffWithoutSleeping() async throws {
        let stub = StubTransport()
        stub.on(.get, "/flaky", respond: .status(503), .status(502), try .json(User(id: 1, name: "Ada")))
        let sleeper = RecordingSleeper()
        let client = makeClient(stub) {
            $0.retryPolicy = RetryPolicy(maxAttempts: 3, backoff: Backoff(base: .milliseconds(100), jitter: false), clock: sleeper.clock)
        }
        let response = try await client.response(Request<User>.get("/flaky"), as: User.self)
        #expect(response.body.name == "Ada")
        #expect(response.metrics.attempts == 3)
        #expect(sleeper.recorded == [.milliseconds(100), .milliseconds(200)])
    }

    @Test func retryAfterIsHonouredAndCapped() async throws {
        let stub = StubTransport()
        stub.on(.get, "/busy", respond: .status(429, headers: [.retryAfter: "7"]), .status(200))
        let sleeper = RecordingSleeper()
        let client = makeClient(stub) { $0.retryPolicy = RetryPolicy(maxAttempts: 2, clock: sleeper.clock, random: { 0 }) }
        try await client.send(Request<Void>.get("/busy"))
        #expect(sleeper.recorded == [.seconds(7)])

        let tooLong = StubTransport()
        tooLong.on(.get, "/busy", respond: .status(503, headers: [.retryAfter: "3600"]), .status(200))
        let capped = makeClient(tooLong) { $0.retryPolicy = RetryPolicy(maxAttempts: 2, maxRetryAfter: .seconds(60), clock: sleeper.clock) }
        await #expect(throws: NetworkError.self) { try await capped.send(Request<Void>.get("/busy")) }
        #expect(tooLong.recordedRequests.count == 1)
    }

    @Test func nonIdempotentMethodsAndOtherStatusesAreNotRetried() async throws {
        let stub = StubTransport()
        stub.on(.post, "/orders", respond: .status(503), .status(201))
        stub.on(.get, "/missing", respond: .status(404), .status(200))
        let sleeper = RecordingSleeper()
        let client = makeClient(stub) { $0.retryPolicy = RetryPolicy(maxAttempts: 5, clock: sleeper.clock) }
        await #expect(throws: NetworkError.self) { try await client.send(Request<Void>.post("/orders")) }
        await #expect(throws: NetworkError.self) { try await client.send(Request<Void>.get("/missing")) }
        #expect(stub.recordedRequests.count == 2)
        #expect(sleeper.recorded.isEmpty)
    }

    @Test func transportFailuresAreRetriedUntilTheLimit() async throws {
        let stub = StubTransport()
        let refused = StubTransport.Stub.failure(.transport(TransportFailure(.cannotConnect, "refused")))
        stub.on(.get, "/down", respond: refused)
        let sleeper = RecordingSleeper()
        let client = makeClient(stub) { $0.retryPolicy = RetryPolicy(maxAttempts: 4, clock: sleeper.clock) }
        await #expect {
            try await client.send(Request<Void>.get("/down"))
        } throws: { error in
            guard let error = error as? NetworkError, case .transport(let failure) = error else { return false }
            return failure.kind == .cannotConnect && error.isConnectivityFailure && error.isRetryable
        }
        #expect(stub.recordedRequests.count == 4)
        #expect(sleeper.recorded.count == 3)
    }
}
