import Foundation
import QueueSystemd
import HTTPTypes
import OfflineQueue
import Plugins

/// Printing data as text or as one JSON document.
enum Output {
    /// Prints `value` (dictionaries, arrays, strings, numbers, booleans, `NSNull`) as JSON.
    static func json(_ value: Any) {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("null".utf8)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// `date` as ISO 8601 with milliseconds, UTC; `NSNull` for `nil`, as JSON wants.
    static func timestamp(_ date: Date?) -> Any {
        guard let date else { return NSNull() }
        return iso(date)
    }

    static func iso(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    /// A short relative form such as `in 12s`, `3m ago`.
    static func relative(_ date: Date?, now: Date = Date()) -> String {
        guard let date else { return "-" }
        let seconds = date.timeIntervalSince(now)
        let text = duration(abs(seconds))
        if abs(seconds) < 1 { return "now" }
        return seconds > 0 ? "in \(text)" : "\(text) ago"
    }

    static func duration(_ seconds: Double) -> String { AgeText.format(seconds) }

    /// Header values with secrets replaced, unless `reveal`.
    static func headers(_ entry: QueueEntry, reveal: Bool) -> [(String, String)] {
        entry.headers.map { header in
            guard !reveal, let name = HTTPField.Name(header.name), Redaction.standard.isSecret(name),
                  !HeaderTemplates.containsPlaceholder(header.value) else {
                return (header.name, header.value)
            }
            return (header.name, Redaction.standard.placeholder)
        }
    }

    /// The URL with its password and secret query values replaced, unless `reveal`.
    static func url(_ entry: QueueEntry, reveal: Bool) -> String {
        if reveal { return entry.url }
        // A URL that takes values from a response (`${response:…}` after its origin) is shown
        // as written: its origin redacted as a URL, the rest by its query.
        if entry.url.contains("${"), let scheme = entry.url.range(of: "://"),
           let rest = entry.url[scheme.upperBound...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            let origin = String(entry.url[..<rest])
            return (URL(string: origin).map(Redaction.standard.redact(url:)) ?? origin) + Redaction.standard.redactQuery(of: String(entry.url[rest...]))
        }
        return URL(string: entry.url).map(Redaction.standard.redact(url:)) ?? Redaction.standard.redactQuery(of: entry.url)
    }

    /// `text` fit for a terminal: control characters (C0, DEL, C1) and the bidirectional
    /// overrides that reorder what is shown are written as escapes (`\x1b`, `\u{202e}`), so a
    /// stored body or a server's answer cannot move the cursor, retitle the window or disguise
    /// text. Line feeds and tabs are kept when `keepingLineBreaks` (a body shown whole).
    static func terminalSafe(_ text: String, keepingLineBreaks: Bool = false) -> String {
        func escaped(_ scalar: Unicode.Scalar) -> String? {
            switch scalar.value {
            case 0x0A, 0x09: keepingLineBreaks ? nil : (scalar == "\n" ? "\\n" : "\\t")
            case 0..<0x20, 0x7F...0x9F: "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: "\\u{" + String(scalar.value, radix: 16) + "}"
            default: nil
            }
        }
        guard text.unicodeScalars.contains(where: { escaped($0) != nil }) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if let escape = escaped(scalar) { result.append(contentsOf: escape.unicodeScalars) } else { result.append(scalar) }
        }
        return String(result)
    }

    /// When `entry` is next due, as a wall time read now: from its boot-clock due time where
    /// the store keeps one, so a backoff stored by a process whose wall clock was off shows
    /// right.
    static func nextAttempt(_ entry: QueueEntry) -> Date {
        entry.nextAttempt(at: QueueClock.system.now())
    }

    /// One entry as the one line `sync list` prints; `held` when a pause holds it back.
    static func line(_ entry: QueueEntry, now: Date, held: Bool = false) -> String {
        let next = entry.state != .pending ? "-" : held ? "paused" : relative(nextAttempt(entry), now: now)
        let status = entry.lastStatus.map(String.init) ?? "-"
        var fields = [String(entry.id), entry.state.rawValue, entry.method, url(entry, reveal: false),
                      "attempts=\(entry.attempts)", "next=\(next)", "status=\(status)"]
        if entry.state == .inflight, let owner = entry.leaseOwner { fields.append("owner=\(owner)") }
        return terminalSafe(fields.joined(separator: "  "))
    }

    /// A drainer's owner string (`host:pid:token:boot`) as people read it.
    static func drainer(_ owner: String) -> String {
        let parts = owner.split(separator: ":")
        guard parts.count >= 2 else { return owner }
        return "process \(parts[1]) on \(parts[0])"
    }

    /// One entry as a JSON object; `full` adds headers and the body.
    static func object(_ entry: QueueEntry, full: Bool, reveal: Bool = false, bodyFolder: String? = nil) -> [String: Any] {
        var object: [String: Any] = [
            "id": entry.id,
            "state": entry.state.rawValue,
            "method": entry.method,
            "url": url(entry, reveal: reveal),
            "attempts": entry.attempts,
            "next_attempt_at": entry.state == .pending ? timestamp(nextAttempt(entry)) : NSNull(),
            "last_status": entry.lastStatus.map { $0 as Any } ?? NSNull(),
            "group": entry.group.map { $0 as Any } ?? NSNull(),
            "priority": entry.priority,
            "created_at": timestamp(entry.createdAt),
            "lease_owner": entry.state == .inflight ? entry.leaseOwner.map { $0 as Any } ?? NSNull() : NSNull(),
            // The trace the entry was enqueued in, which its deliveries continue.
            "trace_id": entry.traceContext.map { $0.traceID as Any } ?? NSNull(),
        ]
        guard full else { return object }
        object["traceparent"] = entry.traceContext.map { $0.traceparent as Any } ?? NSNull()
        object["tracestate"] = entry.traceContext?.tracestate.map { $0 as Any } ?? NSNull()
        object["idempotency_key"] = entry.idempotencyKey
        object["headers"] = headers(entry, reveal: reveal).map { ["name": $0.0, "value": $0.1] }
        object["scopes"] = entry.scopes
        object["name"] = entry.name
        object["last_attempt_at"] = timestamp(entry.lastAttemptAt)
        object["finished_at"] = timestamp(entry.finishedAt)
        object["waiting_for_network"] = entry.waitingForNetwork
        object["lease_expires_at"] = timestamp(entry.leaseExpiresAt)
        object["dead_reason"] = entry.deadReason.map { $0.rawValue as Any } ?? NSNull()
        object["last_error"] = entry.lastError.map { $0 as Any } ?? NSNull()
        object["response_excerpt"] = entry.responseExcerpt.map { $0 as Any } ?? NSNull()
        object["body"] = body(entry, bodyFolder: bodyFolder)
        // A sealed entry's URL is its origin alone, its headers are empty and its body is
        // sealed: the key id says so (`sync keys status`).
        object["sealed_key_id"] = entry.sealKeyID.map { $0 as Any } ?? NSNull()
        if let key = entry.coalescingKey { object["coalescing_key"] = key }
        return object
    }

    static func body(_ entry: QueueEntry, bodyFolder: String?) -> Any {
        switch entry.body {
        case nil:
            return NSNull()
        case .inline(let data):
            var body: [String: Any] = ["length": entry.bodyLength ?? data.count, "stored": "inline"]
            if entry.sealKeyID == nil, data.count <= 4096, let text = String(data: data, encoding: .utf8) { body["text"] = text }
            return body
        case .file(let name, let length):
            // A file beside a SQLite database; chunks in the body table of a PostgreSQL one.
            let length = entry.bodyLength ?? length
            guard let bodyFolder else { return ["length": length, "stored": "apart", "ref": name] }
            return ["length": length, "stored": "file", "path": bodyFolder + "/" + name]
        }
    }
}
