import Foundation
import OfflineQueue

/// `sync list --format csv`: RFC 4180 text for spreadsheets.
enum CSV {
    /// The columns, in order.
    static let header = [
        "id", "state", "method", "url", "group", "priority", "attempts", "next_attempt_at", "last_status",
        "created_at", "finished_at", "dead_reason", "lease_owner", "paused",
    ]

    /// A header record and one record per entry, each ended by CRLF. `held` says whether a
    /// pause holds an entry back.
    static func document(_ entries: [QueueEntry], held: (QueueEntry) -> Bool) -> String {
        var text = record(header)
        for entry in entries {
            text += record([
                String(entry.id), entry.state.rawValue, entry.method, Output.url(entry, reveal: false), entry.group ?? "",
                String(entry.priority), String(entry.attempts),
                entry.state == .pending ? Output.iso(Output.nextAttempt(entry)) : "", entry.lastStatus.map(String.init) ?? "",
                Output.iso(entry.createdAt), entry.finishedAt.map(Output.iso) ?? "", entry.deadReason?.rawValue ?? "",
                entry.state == .inflight ? entry.leaseOwner ?? "" : "", held(entry) ? "true" : "false",
            ].map(field))
        }
        return text
    }

    /// One record: the fields joined by commas, ended by CRLF.
    static func record(_ fields: [String]) -> String {
        fields.joined(separator: ",") + "\r\n"
    }

    /// `value` as one field: quoted, with its quotes doubled, when it holds a comma, a quote,
    /// a CR or an LF (RFC 4180, 2.6 and 2.7).
    ///
    /// A value a spreadsheet would run as a formula (one that starts with `=`, `+`, `-`, `@`,
    /// a tab or a CR: a group or URL chosen by whoever could enqueue) gets a leading `'`, as
    /// OWASP advises against CSV injection; numbers are never such values.
    static func field(_ value: String) -> String {
        var value = value
        if let first = value.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
