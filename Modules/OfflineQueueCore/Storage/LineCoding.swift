import Foundation

/// Header fields and scopes are stored as text, one per line, by the SQLite and PostgreSQL
/// stores alike: readable in `sqlite3` or `psql`, and cheaper to write than JSON. Names and
/// values cannot hold line breaks (checked at enqueue).
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
