import Foundation
import OfflineQueue

/// Kept responses and outcomes (`sync show`, `sync wait`).
extension Output {
    /// What an entry asks to keep, as JSON.
    static func object(_ keeping: ResponseKeeping) -> [String: Any] {
        ["headers": keeping.headers, "body_limit": keeping.bodyLimit]
    }

    /// A kept response as JSON: the status, the kept header fields (`[name, value]` pairs, in
    /// order), the body as text when it is UTF-8 and as base64 otherwise, its length, and
    /// whether it was cut at the entry's limit. A sealed response without the keyring is
    /// `{"sealed": true}`.
    static func object(_ response: KeptResponse) -> [String: Any] {
        var object: [String: Any] = [
            "status": response.status,
            "headers": response.headers.map { [$0.name, $0.value] },
            "length": response.body.count,
            "truncated": response.truncated,
        ]
        if let text = String(data: response.body, encoding: .utf8) { object["text"] = text } else { object["base64"] = response.body.base64EncodedString() }
        return object
    }

    /// The response `entry` kept, as JSON, when it is delivered and kept one; `nil` otherwise.
    /// One sealed that this command has no key for is shown as sealed, not as an error.
    static func keptResponse(of entry: QueueEntry, in queue: OfflineQueue) async throws -> [String: Any]? {
        let kept: KeptResponseReading? = try await queue.keptResponse(of: entry)
        switch kept {
        case .kept(let response)?: return object(response)
        case .sealed?: return ["sealed": true]
        case nil: return nil
        }
    }

    /// Prints a kept response (`object(_:)`'s form) for a terminal: every value escaped.
    static func printKeptResponse(_ object: [String: Any]) {
        if object["sealed"] as? Bool == true {
            print("response: sealed (give the keyring to read it)")
            return
        }
        let truncated = object["truncated"] as? Bool == true ? ", cut at the entry's limit" : ""
        print("response: \(object["status"] ?? ""), \(object["length"] ?? 0) bytes\(truncated)")
        for pair in object["headers"] as? [[String]] ?? [] where pair.count == 2 {
            print(terminalSafe("  \(pair[0]): \(pair[1])"))
        }
        if let text = object["text"] as? String { print(terminalSafe(text, keepingLineBreaks: true)) }
    }
}
