import Foundation
import OfflineQueue

/// What an entry asks to keep of its response, as `sync show` prints it in JSON.
struct KeepingReport: Encodable {
    var headers: [String]
    var bodyLimit: Int

    enum CodingKeys: String, CodingKey {
        case headers, bodyLimit = "body_limit"
    }

    init(_ keeping: ResponseKeeping) {
        headers = keeping.headers
        bodyLimit = keeping.bodyLimit
    }
}

/// A kept response (`sync show`, `sync wait`): the status, the kept header fields (`[name,
/// value]` pairs, in order), the body as text when it is UTF-8 and as base64 otherwise, its
/// length, and whether it was cut at the entry's limit. A sealed response read without the
/// keyring is `{"sealed": true}`.
enum KeptResponseReport: Encodable {
    case kept(KeptResponse)
    case sealed

    enum CodingKeys: String, CodingKey {
        case status, headers, length, truncated, text, base64, sealed
    }

    /// The response `entry` kept, when it is delivered and kept one; `nil` otherwise. One
    /// sealed that this command has no key for is shown as sealed, not as an error.
    static func of(_ entry: QueueEntry, in queue: OfflineQueue) async throws -> KeptResponseReport? {
        let kept: KeptResponseReading? = try await queue.keptResponse(of: entry)
        switch kept {
        case .kept(let response)?: return .kept(response)
        case .sealed?: return .sealed
        case nil: return nil
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .sealed:
            try container.encode(true, forKey: .sealed)
        case .kept(let response):
            try container.encode(response.status, forKey: .status)
            try container.encode(response.headers.map { [$0.name, $0.value] }, forKey: .headers)
            try container.encode(response.body.count, forKey: .length)
            try container.encode(response.truncated, forKey: .truncated)
            if let text = String(data: response.body, encoding: .utf8) {
                try container.encode(text, forKey: .text)
            } else {
                try container.encode(response.body.base64EncodedString(), forKey: .base64)
            }
        }
    }

    /// Prints the response for a terminal: every value escaped.
    func printText() {
        guard case .kept(let response) = self else {
            print("response: sealed (give the keyring to read it)")
            return
        }
        let truncated = response.truncated ? ", cut at the entry's limit" : ""
        print("response: \(response.status), \(response.body.count) bytes\(truncated)")
        for header in response.headers {
            print(Output.terminalSafe("  \(header.name): \(header.value)"))
        }
        if let text = String(data: response.body, encoding: .utf8) { print(Output.terminalSafe(text, keepingLineBreaks: true)) }
    }
}
