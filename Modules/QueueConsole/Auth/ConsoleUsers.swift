public import Foundation

/// What a console user may do.
public enum ConsoleRole: String, Sendable, Hashable, Codable {
    /// Every page, no action: any method other than GET and HEAD is refused before routing.
    case read
    /// Every page and every action.
    case admin
}

/// A signed-in console user.
public struct ConsoleUser: Sendable, Hashable {
    /// The user's name, as in the credentials file.
    public var name: String
    /// What the user may do.
    public var role: ConsoleRole

    /// A user named `name` with `role`.
    public init(name: String, role: ConsoleRole) {
        self.name = name
        self.role = role
    }
}

/// The users of a console, read from a credentials file: one user a line, `name role hash`,
/// where role is `read` or `admin` and hash is either a password hash
/// (`pbkdf2-sha256$ITERATIONS$SALT$KEY`, for basic authentication) or a bearer token's hash
/// (`sha256$HEX`). Blank lines and lines starting with `#` are skipped.
///
/// ```swift
/// let users = try ConsoleUsers(contentsOf: URL(fileURLWithPath: "/etc/courier/console-users"))
/// let line = ConsoleUsers.line(name: "ops", role: .admin, password: "correct horse")
/// ```
public struct ConsoleUsers: Sendable {
    struct Account: Sendable {
        var user: ConsoleUser
        var hash: String
    }

    let accounts: [Account]

    /// Iterations of a new password hash unless told otherwise (OWASP's 2023 figure for
    /// PBKDF2-HMAC-SHA256).
    public static let defaultIterations = 600_000

    /// Users parsed from the text of a credentials file.
    ///
    /// - Throws: ``ConsoleCredentialsError`` naming the first line that does not parse.
    public init(parsing text: String) throws(ConsoleCredentialsError) {
        var accounts: [Account] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 3, let role = ConsoleRole(rawValue: String(fields[1])),
                  fields[2].hasPrefix(PasswordHash.prefix + "$") || fields[2].hasPrefix(TokenHash.prefix + "$")
            else { throw ConsoleCredentialsError(line: number + 1) }
            accounts.append(Account(user: ConsoleUser(name: String(fields[0]), role: role), hash: String(fields[2])))
        }
        self.accounts = accounts
    }

    /// Users read from a credentials file.
    public init(contentsOf url: URL) throws {
        try self.init(parsing: String(contentsOf: url, encoding: .utf8))
    }

    /// A credentials line for a user who signs in with a password (basic authentication).
    public static func line(name: String, role: ConsoleRole, password: String, iterations: Int = defaultIterations) -> String {
        "\(name) \(role.rawValue) \(PasswordHash.make(password: password, iterations: iterations))"
    }

    /// A credentials line for a client that sends a bearer token.
    public static func line(name: String, role: ConsoleRole, token: String) -> String {
        "\(name) \(role.rawValue) \(TokenHash.make(token: token))"
    }

    /// The users' names, in the file's order.
    public var names: [String] { accounts.map(\.user.name) }

    /// Whether there is no user at all.
    public var isEmpty: Bool { accounts.isEmpty }

    /// The user with this name and password, if any.
    func user(name: String, password: String) -> ConsoleUser? {
        // Names are compared in constant time; a name that exists costs one hash (user names
        // are not secrets, passwords are).
        var found: ConsoleUser?
        for account in accounts where account.hash.hasPrefix(PasswordHash.prefix + "$") {
            let nameMatches = constantTimeEqual(Array(account.user.name.utf8), Array(name.utf8))
            if nameMatches && PasswordHash.verify(password: password, stored: account.hash) { found = account.user }
        }
        return found
    }

    /// The user whose bearer token this is, if any.
    func user(token: String) -> ConsoleUser? {
        var found: ConsoleUser?
        for account in accounts where TokenHash.verify(token: token, stored: account.hash) { found = account.user }
        return found
    }
}

/// A credentials file line that does not parse.
public struct ConsoleCredentialsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The line's number, from 1.
    public var line: Int

    /// The error for line number `line` (from 1) of a credentials file.
    public init(line: Int) { self.line = line }

    public var description: String { "credentials line \(line): expected `name read|admin pbkdf2-sha256$…` or `name read|admin sha256$…`" }
}
