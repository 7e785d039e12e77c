public import Foundation

/// What of a delivery's response an entry keeps (``EnqueueOptions/keepResponse``): its status
/// always, the header fields named here, and its body up to ``bodyLimit`` bytes. The response
/// is kept in the transaction that records the delivery, sealed when the queue seals, and
/// removed with the entry (purge, retention).
public struct ResponseKeeping: Sendable, Hashable, Codable {
    /// The header fields kept, by name (lowercased; a field the response repeats is kept each
    /// time). By default those a next request most often needs: `location`, `etag`,
    /// `content-type` and `last-modified`.
    public var headers: [String]
    /// The most bytes of the body kept; a longer body is kept cut at this length and marked
    /// ``KeptResponse/truncated``. 64 KiB by default, at most ``maxBodyLimit``.
    public var bodyLimit: Int

    /// The default ``headers``.
    public static let defaultHeaders = ["location", "etag", "content-type", "last-modified"]
    /// The default ``bodyLimit``: 64 KiB.
    public static let defaultBodyLimit = 64 * 1024
    /// The largest ``bodyLimit``: 1 MiB, so a kept response always fits a row.
    public static let maxBodyLimit = 1024 * 1024
    /// The most header fields one entry may ask for.
    public static let maxHeaders = 32

    /// Keeps the status, the `headers` named and the body up to `bodyLimit` bytes. An enqueue
    /// checks both: names are lowercased, and the limit is at most `maxBodyLimit`.
    public init(headers: [String] = ResponseKeeping.defaultHeaders, bodyLimit: Int = ResponseKeeping.defaultBodyLimit) {
        self.headers = headers
        self.bodyLimit = bodyLimit
    }

    /// Checked and in the stored form: names lowercased, each once, in order; a limit in range.
    package func checked() throws(QueueError) -> ResponseKeeping {
        guard (0...Self.maxBodyLimit).contains(bodyLimit) else {
            throw .invalidRequest("a kept response's body limit must be 0 to \(Self.maxBodyLimit) bytes, not \(bodyLimit)")
        }
        var names: [String] = []
        for header in headers {
            let name = header.lowercased()
            guard !name.isEmpty, Self.isToken(name) else {
                throw .invalidRequest("'\(header)' is not a header field name to keep")
            }
            if !names.contains(name) { names.append(name) }
        }
        guard names.count <= Self.maxHeaders else {
            throw .invalidRequest("an entry may keep at most \(Self.maxHeaders) header fields, not \(names.count)")
        }
        return ResponseKeeping(headers: names, bodyLimit: bodyLimit)
    }

    /// Whether `name` is an RFC 9110 token (a field name).
    static func isToken(_ name: String) -> Bool { name.utf8.allSatisfy(isTokenByte) }

    /// RFC 9110's `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The stored form, one line each: the body limit, then each header name.
    package var stored: String {
        ([String(bodyLimit)] + headers).joined(separator: "\n")
    }

    /// From ``stored``; `nil` for text this version does not read.
    package init?(stored: String) {
        let lines = stored.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let first = lines.first, let limit = Int(first), limit >= 0 else { return nil }
        self.init(headers: Array(lines.dropFirst()).filter { !$0.isEmpty }, bodyLimit: limit)
    }
}

/// A delivery's response as an entry kept it (``ResponseKeeping``).
public struct KeptResponse: Sendable, Hashable, Codable {
    /// The status the server answered.
    public var status: Int
    /// The header fields kept, in the order the response had them.
    public var headers: [StoredHeader]
    /// The body, up to the limit the entry chose.
    public var body: Data
    /// Whether the body was longer than the limit, and is cut at it.
    public var truncated: Bool

    /// A kept response of `status`; no headers, an empty body, and not truncated unless given.
    public init(status: Int, headers: [StoredHeader] = [], body: Data = Data(), truncated: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.truncated = truncated
    }

    /// The value of the first kept header field `name` (any case), or `nil`.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }

    /// The bytes a store keeps (sealed, when the queue seals): a first line
    /// `<status> <truncated 0|1> <length of the header text>`, the header text (one
    /// `name: value` line per field), then the body.
    package var encoded: Data {
        let headerText = LineCoding.encode(headers)
        var data = Data("\(status) \(truncated ? 1 : 0) \(headerText.utf8.count)\n".utf8)
        data.append(contentsOf: headerText.utf8)
        data.append(body)
        return data
    }

    /// From ``encoded``; `nil` for bytes that are not one.
    package init?(encoded data: Data) {
        guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let fields = String(decoding: data[data.startIndex..<newline], as: UTF8.self).split(separator: " ")
        guard fields.count == 3, let status = Int(fields[0]), let truncated = Int(fields[1]), let length = Int(fields[2]),
            (0...1).contains(truncated), length >= 0
        else { return nil }
        let headerStart = data.index(after: newline)
        guard data.endIndex - headerStart >= length else { return nil }
        let headerEnd = headerStart + length
        self.init(
            status: status,
            headers: LineCoding.decodeHeaders(String(decoding: data[headerStart..<headerEnd], as: UTF8.self)),
            body: Data(data[headerEnd...]),
            truncated: truncated == 1
        )
    }
}

/// A kept response as a store holds it: ``KeptResponse/encoded`` in clear, or sealed under the
/// key `keyID` names. A class, so that a ``Settlement`` (which every drained entry makes) grows
/// by a reference, not by the response's fields.
package final class StoredResponse: Sendable, Hashable {
    package let bytes: Data
    /// The key it is sealed under; `nil` in clear.
    package let keyID: String?

    package init(bytes: Data, keyID: String?) {
        self.bytes = bytes
        self.keyID = keyID
    }

    package static func == (lhs: StoredResponse, rhs: StoredResponse) -> Bool {
        lhs.bytes == rhs.bytes && lhs.keyID == rhs.keyID
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(bytes)
        hasher.combine(keyID)
    }
}

/// How an entry ended (`OfflineQueue.outcome(of:)`).
public enum EntryOutcome: Sendable, Hashable {
    /// Delivered: the status it was answered with, and its response when it kept one.
    case delivered(status: Int?, response: KeptResponse?)
    /// Given up on: why, and the last error.
    case dead(reason: EntryLifecycle.DeadReason?, error: String?)
    /// Removed (purged, or by retention) before anyone read how it ended; a delivered entry
    /// removed since reads as purged too.
    case purged
    /// Replaced before it was sent by a newer request under its coalescing key
    /// (``EnqueueOptions/coalescingKey``), never sent: the error names the entry that took it.
    case superseded(error: String?)

    /// A word for it: `delivered`, `dead`, `purged` or `superseded`.
    public var name: String {
        switch self {
        case .delivered: "delivered"
        case .dead: "dead"
        case .purged: "purged"
        case .superseded: "superseded"
        }
    }
}
