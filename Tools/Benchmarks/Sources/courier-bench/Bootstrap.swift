import Foundation

/// A ratio over paired rounds and its bootstrap interval: each round measured both sides close
/// together in time, so a round's ratio cancels most of the load that round saw, and the rounds
/// are resampled whole (pairs kept), never the sides apart.
enum Bootstrap {
    /// The geometric mean of `ratios`: one round at 1.1 and one at 1/1.1 average to 1.
    static func geometricMean(_ ratios: [Double]) -> Double {
        precondition(!ratios.isEmpty && ratios.allSatisfy { $0 > 0 })
        return exp(ratios.map { log($0) }.reduce(0, +) / Double(ratios.count))
    }

    /// The 95 % percentile interval of ``geometricMean(_:)``: `resamples` draws of as many
    /// rounds, with replacement. The seed is fixed, so the same rounds give the same interval.
    static func interval(_ ratios: [Double], resamples: Int = 10_000) -> ClosedRange<Double> {
        var generator = SplitMix64(seed: 0x5EED_CAFE)
        let logs = ratios.map { log($0) }
        var means: [Double] = []
        means.reserveCapacity(resamples)
        for _ in 0..<resamples {
            var sum = 0.0
            for _ in logs.indices { sum += logs[Int.random(in: logs.indices, using: &generator)] }
            means.append(sum / Double(logs.count))
        }
        means.sort()
        let low = means[Int((Double(resamples - 1) * 0.025).rounded(.down))]
        let high = means[Int((Double(resamples - 1) * 0.975).rounded(.up))]
        return exp(low)...exp(high)
    }

    /// A small seeded generator (Steele, Lea and Flood's SplitMix64), so intervals repeat.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
