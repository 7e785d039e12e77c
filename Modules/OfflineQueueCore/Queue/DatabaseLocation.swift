import Foundation

/// Tells a database URL from a file path, and shows a URL without its password.
package enum DatabaseLocation {
    /// Whether `text` is a `postgres://` or `postgresql://` URL (any letter case), which is never
    /// a file path: a path of that form would otherwise create a folder named `postgres:`.
    package static func isPostgresURL(_ text: String) -> Bool {
        let lowered = text.prefix(14).lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// `text` with the password of a URL's user information replaced by `***`; a path or a URL
    /// without a password as it is.
    package static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        // The authority ends at the first `/`, `?` or `#`; user information at its last `@`.
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
