import Foundation

/// The keyring file's text: a first line `courier-keyring v1`, then one key a line,
/// `<id> <base64 key>` with ` primary` after the key that seals. Blank lines and lines that
/// start with `#` are ignored; fields are separated by spaces or tabs.
extension Keyring {
    static let header = "courier-keyring v1"

    /// Reads a keyring from its file's text; `source` names the file in errors.
    ///
    /// Strict: any line that is not a comment, blank, or a well-formed key is an error naming
    /// its line, as are duplicate ids and a count of primary keys other than one. Messages
    /// never quote a key line's fields, which may hold key bytes.
    public init(parsing text: String, source: String) throws(SealError) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        try Self.checkHeader(lines.first ?? "", source: source)
        var keys = [QueueKey](), lineOf = [KeyID: Int](), primaryLine: Int?
        for (index, line) in lines.enumerated().dropFirst() where !line.isEmpty && !line.hasPrefix("#") {
            let number = index + 1
            let (key, isPrimary) = try Self.parseKey(line, source: source, line: number)
            if let first = lineOf[key.id] {
                throw .malformedKeyring(path: source, line: number, reason: "key id \(key.id) is also on line \(first)")
            }
            if isPrimary, let first = primaryLine {
                throw .malformedKeyring(path: source, line: number, reason: "a second key is marked primary (the first is on line \(first))")
            }
            if isPrimary { primaryLine = number }
            lineOf[key.id] = number
            keys.append(key)
        }
        guard !keys.isEmpty else { throw .malformedKeyring(path: source, line: nil, reason: "the keyring holds no keys") }
        guard let primaryLine else { throw .malformedKeyring(path: source, line: nil, reason: "no key is marked primary") }
        self.init(checked: keys, primary: keys.firstIndex { lineOf[$0.id] == primaryLine }!)
    }

    private static func checkHeader(_ line: String, source: String) throws(SealError) {
        guard line != header else { return }
        if line.hasPrefix("courier-keyring v") {
            throw .malformedKeyring(
                path: source, line: 1, reason: "keyring format \(line.dropFirst("courier-keyring ".count)) is not supported (this version reads v1)")
        }
        throw .malformedKeyring(path: source, line: 1, reason: "not a Courier keyring: the first line must be `\(header)`")
    }

    private static func parseKey(_ line: String, source: String, line number: Int) throws(SealError) -> (QueueKey, primary: Bool) {
        func malformed(_ reason: String) -> SealError { .malformedKeyring(path: source, line: number, reason: reason) }
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 2 || fields.count == 3 else {
            throw malformed("a key line holds an id, a base64 key and optionally `primary`, not \(fields.count) fields")
        }
        guard let id = KeyID(fields[0]) else { throw malformed("the key id must be 8 lowercase hexadecimal digits") }
        guard let bytes = Data(base64Encoded: fields[1]) else { throw malformed("key \(id) is not valid base64") }
        guard bytes.count == QueueKey.byteCount else {
            throw malformed("key \(id) has \(bytes.count) bytes, not \(QueueKey.byteCount)")
        }
        guard fields.count == 2 || fields[2] == "primary" else { throw malformed("only `primary` may follow key \(id)") }
        return (try QueueKey(id: id, bytes: bytes), fields.count == 3)
    }

    /// The file's text, key bytes included: for writing to a private file only.
    func fileText() -> String {
        var text = """
            \(Self.header)
            # A Courier queue keyring: keep it private (mode 0600) and apart from the queue's backups.
            # One key a line: its id, the key in base64, and `primary` on the key that seals new entries.

            """
        for key in keys {
            text += "\(key.id) \(key.base64)\(key.id == primary.id ? " primary" : "")\n"
        }
        return text
    }
}
