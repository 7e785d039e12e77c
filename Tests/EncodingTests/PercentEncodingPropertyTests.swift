import Encoding
import Foundation
import HTTPCore
import HTTPTypes
import TestSupport
import Testing

@Suite struct PercentEncodingPropertyTests {
    /// Characters weighted towards the ones that break naive encoders.
    static let tricky: [Character] = Array("+&=/?#% []{},;:@!$'()*\"<>\\^`|~-._é😀\u{0}\n\t") + ["e\u{301}", "🇫🇷"]

    static func randomString(using generator: inout SeededGenerator) -> String {
        let length = Int.random(in: 0...24, using: &generator)
        var result = ""
        for _ in 0..<length {
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: result.append(tricky.randomElement(using: &generator)!)
            case 1: result.append(Character(UnicodeScalar(UInt8.random(in: 0x20...0x7E, using: &generator))))
            default:
                // Any scalar outside the surrogate range.
                var value = UInt32.random(in: 0...0x10FFFF, using: &generator)
                if (0xD800...0xDFFF).contains(value) { value = 0xE000 }
                result.unicodeScalars.append(UnicodeScalar(value)!)
            }
        }
        return result
    }

    @Test func encodeRoundTripsAndLeavesOnlyUnreservedCharacters() {
        var generator = SeededGenerator(seed: 0xC0FFEE)
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~%")
        for _ in 0..<2_000 {
            let string = Self.randomString(using: &generator)
            let encoded = PercentEncoding.encode(string)
            #expect(encoded.removingPercentEncoding == string, "round trip of \(string.debugDescription)")
            #expect(encoded.allSatisfy(allowed.contains), "\(encoded) has a character outside the unreserved set")
        }
    }

    @Test func queriesParseBackIntoTheSameParameters() throws {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<300 {
            var parameters: [String: String] = [:]
            for _ in 0..<Int.random(in: 1...5, using: &generator) {
                parameters[Self.randomString(using: &generator) + "k"] = Self.randomString(using: &generator)
            }
            let query = try URLEncoding.default.percentEncodedQuery(parameters)
            var parsed: [String: String] = [:]
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = try #require(String(parts[0]).removingPercentEncoding)
                parsed[name] = String(parts[1]).removingPercentEncoding
            }
            #expect(parsed == parameters)
        }
    }
}
