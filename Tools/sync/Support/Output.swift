import Foundation
import QueueSystemd
import HTTPTypes
import OfflineQueue
import Plugins

/// Printing data as text or as one JSON document.
enum Output {
    /// Prints `value` as one JSON document on one line: keys sorted, slashes unescaped.
    static func json(_ value: some Encodable) {
        FileHandle.standardOutput.write(jsonData(value) + Data("\n".utf8))
    }

    /// `value` as one line of JSON, keys sorted, slashes unescaped; `null` if it cannot be encoded.
    static func jsonData(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)) ?? Data("null".utf8)
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
}
