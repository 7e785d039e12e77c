/// The W3C trace context an entry was enqueued in (`traceparent`, and `tracestate` when there
/// was one), kept with the entry so that every attempt continues the enqueuer's trace however
/// long the request waited.
///
/// It is metadata, like the entry's origin: stored in columns of its own, in clear when the
/// queue seals what it stores, never among the request's header fields. Both values are checked
/// against the W3C Trace Context format when made, so a stored one is always well formed.
///
/// ```swift
/// let context = try TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
/// context.traceID                   // "4bf92f3577b34da6a3ce929d0e0e4736"
/// ```
public struct TraceContext: Sendable, Hashable, Codable {
    /// The `traceparent` value: `00-<trace id>-<parent id>-<flags>`.
    public let traceparent: String
    /// The `tracestate` value, vendors' list-members; `nil` when there was none.
    public let tracestate: String?

    /// A context from the two header values, checked.
    ///
    /// - Throws: ``InvalidTraceContext`` naming the value that is not of the W3C format:
    ///   `traceparent` of version `00` with a 32-hex trace id and a 16-hex parent id (lowercase,
    ///   neither all zeros) and 2-hex flags; `tracestate` of at most 512 characters and 32
    ///   list-members, each `key=value` as the specification has them, no key twice.
    public init(traceparent: String, tracestate: String? = nil) throws(InvalidTraceContext) {
        if let problem = Self.traceparentProblem(traceparent) {
            throw InvalidTraceContext(field: "traceparent", value: traceparent, reason: problem)
        }
        if let tracestate, let problem = Self.tracestateProblem(tracestate) {
            throw InvalidTraceContext(field: "tracestate", value: tracestate, reason: problem)
        }
        self.traceparent = traceparent
        // An empty tracestate is the same as none.
        self.tracestate = tracestate.flatMap { $0.allSatisfy { $0 == " " || $0 == "\t" || $0 == "," } ? nil : $0 }
    }

    /// A context read back from a store's columns: checked again, so that a row changed by
    /// hand never fails a delivery (a malformed one reads as none, or without its tracestate).
    package init?(stored traceparent: String?, tracestate: String?) {
        guard let context = Self.lenient(traceparent: traceparent, tracestate: tracestate).context else { return nil }
        self = context
    }

    /// The trace's id: 32 lowercase hex digits.
    public var traceID: String { String(Substring(traceparent.utf8.dropFirst(3).prefix(32))) }

    /// The id of the span the entry was enqueued in: 16 lowercase hex digits.
    public var parentID: String { String(Substring(traceparent.utf8.dropFirst(36).prefix(16))) }

    /// The context the values give, or as much of it as is valid: a malformed `traceparent`
    /// gives none, a malformed `tracestate` is left out (as the specification asks of a
    /// receiver). `problem` says what was left out, for a warning; nothing is thrown.
    public static func lenient(traceparent: String?, tracestate: String?) -> (context: TraceContext?, problem: InvalidTraceContext?) {
        guard let traceparent else { return (nil, nil) }
        do {
            return (try TraceContext(traceparent: traceparent, tracestate: tracestate), nil)
        } catch where error.field == "tracestate" {
            return ((try? TraceContext(traceparent: traceparent)), error)
        } catch {
            return (nil, error)
        }
    }

    // MARK: - The format
    //
    // Checked on the string's bytes in place: a drain checks every stored context it reads.

    private static func traceparentProblem(_ value: String) -> String? {
        var value = value
        return value.withUTF8 { bytes -> String? in
            guard bytes.count == 55 else { return "is \(bytes.count) characters long, not 55 (version 00)" }
            guard bytes[0] == zero, bytes[1] == zero else { return "is not of version 00" }
            guard bytes[2] == dash, bytes[35] == dash, bytes[52] == dash else { return "does not separate its fields with '-'" }
            let traceID = bytes[3..<35], parentID = bytes[36..<52], flags = bytes[53..<55]
            guard traceID.allSatisfy(isLowerHex), parentID.allSatisfy(isLowerHex), flags.allSatisfy(isLowerHex) else {
                return "has a character that is not a lowercase hex digit"
            }
            guard traceID.contains(where: { $0 != zero }) else { return "has a trace id of zeros" }
            guard parentID.contains(where: { $0 != zero }) else { return "has a parent id of zeros" }
            return nil
        }
    }

    private static func tracestateProblem(_ value: String) -> String? {
        var value = value
        return value.withUTF8 { bytes -> String? in
            guard bytes.count <= 512 else { return "is longer than 512 characters" }
            // The first key apart: a tracestate of one member (the common case) allocates nothing.
            var firstKey: Slice<UnsafeBufferPointer<UInt8>>?
            var keys: [Slice<UnsafeBufferPointer<UInt8>>] = []
            var start = 0
            while start <= bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.count
                defer { start = end + 1 }
                var member = bytes[start..<end]
                while let first = member.first, first == space || first == tab { member = member.dropFirst() }
                while let last = member.last, last == space || last == tab { member = member.dropLast() }
                if member.isEmpty { continue }
                guard let equals = member.firstIndex(of: UInt8(ascii: "=")) else { return "has a list-member without '='" }
                let key = member[..<equals], memberValue = member[(equals + 1)...]
                let name = { String(decoding: key, as: UTF8.self).debugDescription }
                guard isKey(key) else { return "has the key \(name()), not of the specification's form" }
                guard isValue(memberValue) else { return "has a value for \(name()) that is not of the specification's form" }
                guard firstKey.map({ !$0.elementsEqual(key) }) ?? true, !keys.contains(where: { $0.elementsEqual(key) }) else {
                    return "has the key \(name()) twice"
                }
                if firstKey == nil { firstKey = key } else { keys.append(key) }
            }
            guard keys.count < 32 else { return "has more than 32 list-members" }
            return nil
        }
    }

    /// `simple-key` or `tenant-id@system-id`.
    private static func isKey(_ key: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        let rest: (UInt8) -> Bool = { isLowerAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == dash || $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "/") }
        if let at = key.firstIndex(of: UInt8(ascii: "@")) {
            let tenant = key[..<at], system = key[(at + 1)...]
            guard let first = tenant.first, isLowerAlpha(first) || isDigit(first), tenant.count <= 241, tenant.dropFirst().allSatisfy(rest) else { return false }
            guard let start = system.first, isLowerAlpha(start), system.count <= 14, system.dropFirst().allSatisfy(rest) else { return false }
            return true
        }
        guard let first = key.first, isLowerAlpha(first), key.count <= 256 else { return false }
        return key.dropFirst().allSatisfy(rest)
    }

    /// Up to 256 printable ASCII characters but `,` and `=`, the last not a space.
    private static func isValue(_ value: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard let last = value.last, last != space, value.count <= 256 else { return false }
        return value.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "=") }
    }

    private static let dash = UInt8(ascii: "-"), zero = UInt8(ascii: "0"), space = UInt8(ascii: " "), tab = UInt8(ascii: "\t")
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    private static func isLowerAlpha(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
    private static func isLowerHex(_ byte: UInt8) -> Bool { isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f")) }
}
