import Foundation
@testable import OfflineQueueCore
import Testing

/// A bucket's tokens are counted whole from readings of the boot clock (seconds since boot),
/// whose differences carry an error of about 1e-12 s, or, on PostgreSQL, of the fleet's clock
/// (seconds since the epoch, about 2.4e-7 s).
@Suite("A token bucket read at the moment a token is due")
struct FlowTokenTests {
    @Test("the token due exactly now is taken, at any boot-clock reading", arguments: [100.5, 1_000.5, 16_000.5, 17_000.5, 86_400.5, 3_000_000.5, 1_796_000_000.5, 1_796_000_000.3, 4_000_000_000.7])
    func dueTokenTaken(refilledAt: Double) {
        var row = OriginFlow(origin: "https://api.example.com")
        row.rate = 10
        row.burst = 2
        row.tokens = 0
        row.refilledAt = refilledAt
        // One token a tenth of a second after the refill: (refilledAt + 0.1 - refilledAt) * 10,
        // which reads 0.9999999999854481 at 17,000.5 and 0.9999990463256836 at 1,796,000,000.5.
        var book = OriginFlowBook([row], inflight: [:], now: refilledAt + 0.1)
        let first = book.admit(url: "https://api.example.com/v1/a")
        let second = book.admit(url: "https://api.example.com/v1/b")
        #expect(first, "the token due now")
        #expect(!second, "one token, not two")
    }
}
