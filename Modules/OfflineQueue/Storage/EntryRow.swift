import Foundation
import GRDB

/// Header fields and scopes are stored as text, one per line: readable in `sqlite3`, and far
/// cheaper to write than JSON. Names and values cannot hold line breaks (checked at enqueue).
package enum LineCoding {
    package static func encode(_ headers: [StoredHeader]) -> String {
        var text = ""
        for header in headers {
            text += header.name
            text += ": "
            text += header.value
            text += "\n"
        }
        return text
    }

    /// Scans bytes, not characters: a claim decodes every claimed row's headers.
    package static func decodeHeaders(_ text: String) -> [StoredHeader] {
        let bytes = text.utf8, newline = UInt8(ascii: "\n")
        var headers: [StoredHeader] = []
        // One allocation for the array (not one per doubling), none for a list of lines.
        headers.reserveCapacity(bytes.reduce(0) { $1 == newline ? $0 + 1 : $0 } + 1)
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: newline) ?? bytes.endIndex
            let line = bytes[start..<end]
            start = end == bytes.endIndex ? end : bytes.index(after: end)
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            var value = line[line.index(after: colon)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
            headers.append(StoredHeader(name: String(Substring(line[..<colon])), value: String(Substring(value))))
        }
        return headers
    }

    package static func encode(_ scopes: [String]) -> String { scopes.joined(separator: "\n") }

    package static func decodeScopes(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init)
    }
}

extension QueueEntry {
    /// An entry from a row selected with ``Schema/entryColumns``, of the database at `path`.
    ///
    /// - Throws: ``QueueError/corruptDatabase(path:reason:)`` naming the row for a state or a
    ///   dead reason this version does not know: never read as something else.
    init(row: Row, path: String) throws(QueueError) {
        let bodyFile: String? = row[6]
        let bodyLength: Int? = row[7]
        let inline: Data? = row[5]
        let body: StoredBody? = if let bodyFile {
            .file(name: bodyFile, length: bodyLength ?? 0)
        } else if let inline {
            .inline(inline)
        } else {
            nil
        }
        let timeoutMilliseconds: Int64? = row[12]
        let stateText: String = row[13]
        guard let state = EntryState(rawValue: stateText) else {
            throw .corruptDatabase(path: path, reason: "entry \(row[0] as Int64) has state '\(stateText)', which this version does not know")
        }
        let deadReasonText: String? = row[27]
        let deadReason = try deadReasonText.map { text throws(QueueError) in
            guard let reason = DeadReason(rawValue: text) else {
                throw .corruptDatabase(path: path, reason: "entry \(row[0] as Int64) has dead reason '\(text)', which this version does not know")
            }
            return reason
        }
        self.init(
            id: row[0],
            idempotencyKey: row[1],
            method: row[2],
            url: row[3],
            headers: LineCoding.decodeHeaders(row[4]),
            body: body,
            scopes: LineCoding.decodeScopes(row[8]),
            name: row[9],
            group: row[10],
            priority: row[11],
            timeout: timeoutMilliseconds.map { .milliseconds($0) },
            state: state,
            attempts: row[14],
            createdAt: Date(timeIntervalSince1970: row[15]),
            budgetStartedAt: Date(timeIntervalSince1970: row[16]),
            nextAttemptAt: Date(timeIntervalSince1970: row[17]),
            lastAttemptAt: (row[18] as Double?).map(Date.init(timeIntervalSince1970:)),
            finishedAt: (row[19] as Double?).map(Date.init(timeIntervalSince1970:)),
            waitingForNetwork: row[20],
            leaseOwner: row[21],
            leaseExpiresAt: (row[22] as Double?).map(Date.init(timeIntervalSince1970:)),
            lastStatus: row[23],
            lastError: row[24],
            responseExcerpt: row[25],
            budgetUptime: row[26],
            deadReason: deadReason ?? Self.legacyDeadReason(state: stateText, lastError: row[24]),
            // Read only for a pending row: a claim's rows (in flight) skip the text.
            nextDue: state == .pending ? (row[29] as String?).map { DueTime(boot: $0, uptime: row[28]) } : nil
        )
    }

    /// The reason a dead row of schema 3 or older, read without migrating it, kept as the
    /// prefix of its last error (`expired: older than …`).
    private static func legacyDeadReason(state: String, lastError: String?) -> DeadReason? {
        guard state == EntryState.dead.rawValue, let lastError, let colon = lastError.range(of: ": ") else { return nil }
        return DeadReason(rawValue: String(lastError[..<colon.lowerBound]))
    }
}
