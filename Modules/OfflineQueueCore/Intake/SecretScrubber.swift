import Foundation

/// Replaces secret values in text that is about to be stored or printed (an error response's
/// excerpt, an error message) with `<redacted>`.
///
/// For a value such as `Bearer eyJ…` both the whole value and the token after the scheme are
/// replaced, since a server may echo either. Values shorter than four characters are left out:
/// replacing them would garble the text and hide nothing.
struct SecretScrubber: Sendable {
    private var values: Set<String> = []

    /// Adds a secret value.
    mutating func add(_ value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.count >= 4 { values.insert(trimmed) }
        if let space = trimmed.firstIndex(of: " ") {
            let token = trimmed[trimmed.index(after: space)...].trimmingCharacters(in: .whitespaces)
            if token.count >= 4 { values.insert(token) }
        }
    }

    /// `text` with every secret value replaced, the longest first.
    func scrub(_ text: String) -> String {
        guard !values.isEmpty else { return text }
        var result = text
        for value in values.sorted(by: { $0.count > $1.count }) {
            result = result.replacingOccurrences(of: value, with: "<redacted>")
        }
        return result
    }
}
