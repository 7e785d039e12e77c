import Foundation
import HTTPCore
import Testing
import TestSupport

/// `collect(upTo:expectedCount:)`: the announced length is a hint for one allocation, never
/// trusted for the result or the limit.
@Suite("ByteStream.collect: one allocation at the announced size, whatever the body turns out to be")
struct ByteStreamCollectTests {
    /// `count` bytes (0, 1, 2, … wrapping) in chunks of `chunk`.
    static func stream(_ count: Int, chunk: Int) -> ByteStream {
        let bytes = TestPayload.periodic(TestPayload.affinePeriod(multiplier: 1), count: count)
        let offset = LockedCounter()
        return ByteStream {
            let start = offset.advance(by: chunk)
            guard start < bytes.count else { return nil }
            return bytes.subdata(in: start..<min(start + chunk, bytes.count))
        }
    }

    static func expected(_ count: Int) -> Data { TestPayload.periodic(TestPayload.affinePeriod(multiplier: 1), count: count) }

    @Test("the announced size, a smaller or larger one, or none: the same bytes", arguments: [nil, 0, 1, 999, 100_000, 100_001, 5_000_000])
    func hintsNeverChangeTheResult(expected hint: Int?) async throws {
        for (count, chunk) in [(0, 7), (1, 7), (100_000, 4096), (100_000, 100_000), (100_000, 1)] {
            let data = try await Self.stream(count, chunk: chunk).collect(upTo: 1 << 20, expectedCount: hint)
            #expect(data == Self.expected(count), "count \(count), chunk \(chunk), hint \(String(describing: hint))")
        }
    }

    @Test("the limit holds whatever is announced: a hint under the limit with a longer body, and a hint over it")
    func limitHolds() async throws {
        for hint in [nil, 10, 1_000, 1 << 30] as [Int?] {
            await #expect(throws: NetworkError.self, "hint \(String(describing: hint))") {
                _ = try await Self.stream(2_000, chunk: 300).collect(upTo: 1_000, expectedCount: hint)
            }
            await #expect(throws: NetworkError.self, "one chunk over the limit, hint \(String(describing: hint))") {
                _ = try await Self.stream(2_000, chunk: 2_000).collect(upTo: 1_000, expectedCount: hint)
            }
            let exact = try await Self.stream(1_000, chunk: 300).collect(upTo: 1_000, expectedCount: hint)
            #expect(exact.count == 1_000)
        }
    }
}

/// A counter a `@Sendable` closure can advance.
final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    /// Returns the value before adding `step`.
    func advance(by step: Int) -> Int {
        lock.lock()
        defer { lock.unlock() }
        defer { value += step }
        return value
    }
}
