import Encoding
import Foundation
import HTTPCore
import HTTPTypes
import Testing

@Suite struct JSONEncodingTests {
    @Test func nestedParametersWithSortedKeys() throws {
        let parameters: [String: Any] = ["user": ["scores": [1, 2.5], "name": "Ada", "admin": false], "id": 7, "note": NSNull()]
        let draft = try applied(.parameters(parameters, encoding: JSONEncoding.default), method: .post)
        #expect(bodyText(of: draft) == #"{"id":7,"note":null,"user":{"admin":false,"name":"Ada","scores":[1,2.5]}}"#)
        #expect(draft.headers[.contentType] == "application/json")
    }

    @Test func optionalInsideAnyBecomesNull() throws {
        let missing: Int? = nil
        let data = try JSONEncoding.default.data(for: ["a": missing as Any, "b": Optional(3) as Any])
        #expect(String(decoding: data, as: UTF8.self) == #"{"a":null,"b":3}"#)
    }

    @Test func reservedAndNonASCIICharactersSurvive() throws {
        let value = "+ & = / ? # space é 😀 \"quoted\""
        let data = try JSONEncoding.default.data(for: ["v": value])
        let back = try JSONSerialization.jsonObject(with: data) as? [String: String]
        #expect(back?["v"] == value)
    }

    @Test func prettyPrintedStillSortsKeys() throws {
        let data = try JSONEncoding.prettyPrinted.data(for: ["b": 1, "a": 2])
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\n"))
        #expect(try #require(text.range(of: "\"a\"")).lowerBound < #require(text.range(of: "\"b\"")).lowerBound)
    }

    @Test func customClassNamesItsKeyPath() {
        let failure = encodingFailure { _ = try JSONEncoding.default.encode(["user": ["scores": [1, 2, Opaque()]]]) }
        #expect(failure?.keyPath == ["user", "scores", "2"])
        #expect(failure?.description.hasPrefix("user.scores.2: a value of type Opaque is not a JSON value") == true)
    }

    @Test func dateIsNotAJSONValue() {
        #expect(encodingFailure { _ = try JSONEncoding.default.encode(["when": Date()]) }?.keyPath == ["when"])
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteDoubles(value: Double) {
        #expect(encodingFailure { _ = try JSONEncoding.default.encode(["a": [["b": value]]]) }?.keyPath == ["a", "0", "b"])
    }

    @Test func nonFiniteFloatAndNSNumber() {
        #expect(encodingFailure { _ = try JSONEncoding.default.encode(["f": Float.nan]) }?.keyPath == ["f"])
        #expect(encodingFailure { _ = try JSONEncoding.default.encode(["n": NSNumber(value: Double.infinity)]) }?.keyPath == ["n"])
        #expect(encodingFailure { _ = try JSONEncoding.default.encode(["d": Decimal.nan]) }?.keyPath == ["d"])
    }

    @Test func invalidTopLevel() throws {
        let failure = encodingFailure { _ = try JSONEncoding.default.data(for: "just a string") }
        #expect(failure?.keyPath == [])
        #expect(failure?.message.contains("top level") == true)
        let draft = try applied(.jsonObject([["id": 1], ["id": 2]]), method: .post)
        #expect(bodyText(of: draft) == #"[{"id":1},{"id":2}]"#)
        #expect(encodingFailure { _ = try applied(.jsonObject(42)) } != nil)
    }

    @Test func numericEdgeCases() throws {
        let data = try JSONEncoding.default.data(for: ["big": UInt64.max, "small": Int8.min, "f": Float(0.1), "dec": Decimal(string: "1.25")!])
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#""big":18446744073709551615"#))
        #expect(text.contains(#""small":-128"#))
        #expect(text.contains(#""f":0.1"#))
        #expect(text.contains(#""dec":1.25"#))
    }
}
