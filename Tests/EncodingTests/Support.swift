import Encoding
import Foundation
import HTTPCore
import HTTPTypes

/// `content` applied to a fresh draft for `method`.
func applied(_ content: RequestContent, method: HTTPRequest.Method = .get) throws(NetworkError) -> RequestDraft {
    var draft = RequestDraft(method: method, url: URL(string: "https://api.test/v1/items")!)
    try content.apply(to: &draft, context: EncodingContext(jsonEncoder: JSONEncoder()))
    return draft
}

/// The draft's query as it would go on the wire.
func query(of draft: RequestDraft) -> String {
    draft.percentEncodedQueryItems.map { item in item.value.map { "\(item.name)=\($0)" } ?? item.name }.joined(separator: "&")
}

/// The draft's in-memory body as text.
func bodyText(of draft: RequestDraft) -> String? {
    guard let body = draft.body, case .data(let data) = body.source else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// The encoding failure `work` throws, or `nil` when it throws nothing or something else.
func encodingFailure(_ work: () throws -> Void) -> EncodingFailure? {
    do {
        try work()
        return nil
    } catch {
        if case .encoding(let failure)? = error as? NetworkError { return failure }
        return nil
    }
}

/// A class that is no JSON value and no query value.
final class Opaque {}

/// A deterministic random source (SplitMix64), so property tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
