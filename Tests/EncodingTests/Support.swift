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

