import Foundation

/// A value a request takes from the response an entry it waits for kept
/// (``EnqueueOptions/after``, ``EnqueueOptions/keepResponse``), written where the value goes
/// and resolved when the request is sent:
///
/// - `${response:ID:/json/pointer}`: a value of the kept body, by JSON Pointer (RFC 6901);
/// - `${response:ID:header:NAME}`: a kept header field (the first of that name);
/// - `${response:ID:status}`: the status.
///
/// Each value is inserted as where it goes wants it: in the URL's path or query, as one
/// percent-encoded segment (a string's text, a number's digits); in a header value, as it is,
/// and the value then checked; in a body, as JSON: a placeholder that is a whole JSON string
/// (`"${response:7:/id}"`) or stands outside any string becomes the JSON value itself (a number
/// stays a number), and one inside a longer string becomes the value's text, escaped for it.
///
/// ```swift
/// let note = try await queue.enqueue(method: "POST", url: "https://api.example.com/notes", body: .data(draft),
///                                    options: EnqueueOptions(keepResponse: ResponseKeeping()))
/// try await queue.enqueue(method: "PUT", url: "https://api.example.com/notes/${response:\(note.id):/id}/tags",
///                         headers: [("If-Match", "${response:\(note.id):header:etag}")],
///                         options: EnqueueOptions(after: [note.id]))
/// ```
///
/// An enqueue refuses a reference to an entry it does not wait for, to one that keeps no
/// response (or not the header named), and one in the URL's scheme or host. A reference that
/// cannot be resolved when the request is sent (no such member, a body that is not JSON, a
/// kept body cut short) makes the entry dead, with a reason naming the reference: a request is
/// never sent with a placeholder in it.
public struct ResponseReference: Sendable, Hashable, CustomStringConvertible {
    /// What of the kept response a reference takes.
    public enum Part: Sendable, Hashable {
        /// The status.
        case status
        /// The first kept header field of this name (lowercased).
        case header(String)
        /// The body's value at this JSON Pointer (RFC 6901, such as `/id` or `/items/0/name`).
        case json(pointer: String)
    }

    /// The entry whose kept response it reads.
    public var entry: EntryID
    /// What it reads of it.
    public var part: Part

    /// A reference to `part` of the response `entry` kept.
    public init(entry: EntryID, part: Part) {
        self.entry = entry
        self.part = part
    }

    /// The placeholder as written: `${response:7:/id}`.
    public var description: String {
        switch part {
        case .status: "${response:\(entry):status}"
        case .header(let name): "${response:\(entry):header:\(name)}"
        case .json(let pointer): "${response:\(entry):\(pointer)}"
        }
    }

    /// The opening of every response placeholder.
    static let opening = "${response:"

    /// The most bytes of a body that takes values, so that it is resolved in memory.
    public static let maxBodyLength = 1024 * 1024

    /// Parses the inside of a placeholder (`response:7:/id`, without `${` and `}`).
    init(inside text: Substring) throws(QueueError) {
        let placeholder = "${\(text)}"
        let fields = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0] == "response" else { throw Self.malformed(placeholder, "it is not ${response:ID:WHAT}") }
        guard let id = EntryID(fields[1]), id > 0 else { throw Self.malformed(placeholder, "\(fields[1].debugDescription) is not an entry id") }
        let what = fields[2]
        if what == "status" {
            part = .status
        } else if what.hasPrefix("header:") {
            let name = what.dropFirst("header:".count).lowercased()
            guard !name.isEmpty, ResponseKeeping.isToken(name) else {
                throw Self.malformed(placeholder, "\(name.debugDescription) is not a header field name")
            }
            part = .header(name)
        } else if what.hasPrefix("/") {
            guard what.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0 != "\"" && $0 != "\\" }) else {
                throw Self.malformed(placeholder, "the pointer holds a quote, a backslash or a control character")
            }
            var rest = what.dropFirst()
            while let tilde = rest.firstIndex(of: "~") {
                let next = rest.index(after: tilde)
                guard next < rest.endIndex, rest[next] == "0" || rest[next] == "1" else {
                    throw Self.malformed(placeholder, "'~' in a JSON Pointer is '~0' or '~1'")
                }
                rest = rest[next...]
            }
            part = .json(pointer: String(what))
        } else {
            throw Self.malformed(placeholder, "what it takes is 'status', 'header:NAME' or a JSON Pointer such as '/id'")
        }
        entry = id
    }

    private static func malformed(_ placeholder: String, _ why: String) -> QueueError {
        .invalidRequest("\(placeholder.debugDescription) is not a response reference: \(why)")
    }

    /// The references in `text`, in order, with where each placeholder stands.
    ///
    /// - Throws: ``QueueError/invalidRequest(_:)`` for a placeholder that does not parse or is
    ///   not closed.
    static func occurrences(in text: String) throws(QueueError) -> [(reference: ResponseReference, range: Range<String.Index>)] {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return [] }
        var found: [(ResponseReference, Range<String.Index>)] = []
        var rest = text[...]
        while let start = rest.range(of: opening) {
            guard let close = rest[start.upperBound...].firstIndex(of: "}") else {
                throw .invalidRequest("\(String(rest[start.lowerBound...]).debugDescription): a response reference is not closed with '}'")
            }
            let inside = rest[rest.index(start.lowerBound, offsetBy: 2)..<close]
            found.append((try ResponseReference(inside: inside), start.lowerBound..<rest.index(after: close)))
            rest = rest[rest.index(after: close)...]
        }
        return found
    }

    /// The references in `text`, in order.
    public static func references(in text: String) throws(QueueError) -> [ResponseReference] {
        try occurrences(in: text).map(\.reference)
    }

    /// Whether `text` may hold a reference: a byte scan for `$` answers for most.
    static func mayContain(_ text: String) -> Bool {
        text.utf8.contains(UInt8(ascii: "$")) && text.contains(opening)
    }

    /// Whether `data` may hold a reference.
    static func mayContain(_ data: Data) -> Bool {
        guard data.contains(UInt8(ascii: "$")) else { return false }
        return data.range(of: Data(opening.utf8)) != nil
    }

    /// The stored form of ``QueueEntry/responseSources`` and whether the body takes values:
    /// the ids joined by commas, then ` body` when it does; `nil` for an entry that takes none.
    package static func stored(_ sources: [EntryID], body: Bool) -> String? {
        sources.isEmpty ? nil : sources.map(String.init).joined(separator: ",") + (body ? " body" : "")
    }

    /// ``QueueEntry/responseSources`` and whether the body takes values, from ``stored(_:body:)``.
    package static func sources(stored: String?) -> (sources: [EntryID], body: Bool) {
        guard let stored else { return ([], false) }
        let parts = stored.split(separator: " ")
        return (parts.first?.split(separator: ",").compactMap { EntryID($0) } ?? [], parts.dropFirst().contains("body"))
    }

    /// What the entry it reads must keep for it: `nil` when `keeping` keeps it, or why not.
    func unmet(by keeping: ResponseKeeping?) -> String? {
        guard let keeping else {
            return "entry \(entry) keeps no response for \(self) to read: enqueue it with a kept response (EnqueueOptions.keepResponse, sync enqueue --keep-response)"
        }
        switch part {
        case .status:
            return nil
        case .header(let name):
            return keeping.headers.contains(name) ? nil : "entry \(entry) does not keep header field \(name) for \(self) to read (it keeps \(keeping.headers.isEmpty ? "none" : keeping.headers.joined(separator: ", ")))"
        case .json:
            return keeping.bodyLimit > 0 ? nil : "entry \(entry) keeps no body (its limit is 0) for \(self) to read"
        }
    }

    /// Checks, in the transaction that inserts a child, that each reference's entry keeps what
    /// it reads (`keeping`: what each referenced parent keeps, absent for one that keeps none).
    ///
    /// - Throws: ``QueueError/invalidRequest(_:)`` naming the first reference that would not resolve.
    package static func check(_ references: [ResponseReference], keeping: [EntryID: ResponseKeeping]) throws(QueueError) {
        for reference in references {
            if let why = reference.unmet(by: keeping[reference.entry]) { throw .invalidRequest(why) }
        }
    }
}
