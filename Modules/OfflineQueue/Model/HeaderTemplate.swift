public import Foundation
public import HTTPCore

/// Header values with placeholders resolved when the request is sent, so that no secret is
/// kept at rest in the queue:
///
/// - `${env:NAME}`: the environment variable `NAME` of the process that sends.
/// - `${credential:NAME}`: the file `NAME` in `$CREDENTIALS_DIRECTORY` (a systemd credential,
///   `LoadCredential=`), with one trailing newline removed.
///
/// A template resolves only for the origins the *sending* process allows for its name
/// (``allowedOrigins``): whoever can enqueue cannot send the service's secrets to a host of
/// their choosing. Clear-text `http` gets a secret only on loopback.
///
/// ```swift
/// var templates = HeaderTemplates()
/// try templates.allow("api-token", for: "https://api.example.com")
/// configuration.templates = templates
/// // stored as written, sent as "Bearer eyJ..." to https://api.example.com only
/// try await queue.enqueue(method: "POST", url: "https://api.example.com/events",
///                         headers: [("Authorization", "Bearer ${credential:api-token}")])
/// ```
public struct HeaderTemplates: Sendable {
    /// Where `${env:…}` looks; the process environment by default.
    public var environment: [String: String]
    /// Where `${credential:…}` looks; `$CREDENTIALS_DIRECTORY` by default.
    public var credentialsDirectory: URL?
    /// The origins each template name (`NAME` of `${env:NAME}` or `${credential:NAME}`) may be
    /// sent to. A name with no entry resolves nowhere.
    public var allowedOrigins: [String: Set<Origin>] = [:]

    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        credentialsDirectory: URL? = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"].map { URL(fileURLWithPath: $0, isDirectory: true) }
    ) {
        self.environment = environment
        self.credentialsDirectory = credentialsDirectory
    }

    /// Whether `value` holds a placeholder.
    public static func containsPlaceholder(_ value: String) -> Bool {
        // Most values have no `$` at all: a byte scan answers before any substring search.
        guard value.utf8.contains(UInt8(ascii: "$")) else { return false }
        return value.contains("${env:") || value.contains("${credential:")
    }

    /// Allows the template `name` to resolve for `origin` (`https://host[:port]`).
    ///
    /// - Throws: ``TemplateError/invalidAllowance(_:)`` for an origin that is not http(s), or is
    ///   clear-text `http` off loopback.
    public mutating func allow(_ name: String, for origin: String) throws(TemplateError) {
        guard !name.isEmpty, let parsed = Origin(origin), parsed.isSecure || parsed.isLoopback else {
            throw .invalidAllowance("\(name)=\(origin)")
        }
        allowedOrigins[name, default: []].insert(parsed)
    }

    /// Parses `NAME=ORIGIN` pairs (`--allow-secret`, or `SYNC_ALLOW_SECRETS` split at commas).
    public mutating func allow(_ pairs: [String]) throws(TemplateError) {
        for pair in pairs where !pair.trimmingCharacters(in: .whitespaces).isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { throw .invalidAllowance(pair) }
            try allow(parts[0], for: parts[1])
        }
    }

    /// The template names in `value`, as written (`env:NAME` or `credential:NAME`).
    public static func placeholders(in value: String) -> [String] {
        guard containsPlaceholder(value) else { return [] }
        var found: [String] = []
        var rest = Substring(value)
        while let start = rest.range(of: "${"), let end = rest[start.upperBound...].firstIndex(of: "}") {
            found.append(String(rest[start.upperBound..<end]))
            rest = rest[rest.index(after: end)...]
        }
        return found
    }

    /// Whether `value` holds a template *and* literal text that could itself be a secret: the
    /// text outside the templates, but for a leading authentication scheme (`Bearer `, `Basic `).
    /// Such a value is handled as a secret, never stored or printed as it is.
    public static func mixesLiteralSecret(_ value: String) -> Bool {
        guard containsPlaceholder(value) else { return false }
        var literal = ""
        var rest = Substring(value)
        while let start = rest.range(of: "${"), let end = rest[start.upperBound...].firstIndex(of: "}") {
            literal += rest[..<start.lowerBound]
            rest = rest[rest.index(after: end)...]
        }
        literal += rest
        let words = literal.split(separator: " ", omittingEmptySubsequences: true)
        if words.isEmpty { return false }
        let scheme = words[0].allSatisfy(\.isLetter) && value.hasPrefix(words[0] + " ")
        return !(scheme && words.count == 1)
    }

    /// `value` with every placeholder replaced, for a request to `origin`.
    ///
    /// - Throws: ``TemplateError`` naming the template that is not allowed for `origin`, or the
    ///   variable or credential that is missing.
    public func resolve(_ value: String, for origin: Origin?) throws(TemplateError) -> String {
        guard Self.containsPlaceholder(value) else { return value }
        var result = ""
        var rest = Substring(value)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw .malformed(value)
            }
            let inside = rest[start.upperBound..<end]
            try check(inside, origin: origin)
            result += try substitute(inside, in: value)
            rest = rest[rest.index(after: end)...]
        }
        result += rest
        guard !result.contains("\r"), !result.contains("\n") else { throw .lineBreak(value) }
        return result
    }

    private func check(_ placeholder: Substring, origin: Origin?) throws(TemplateError) {
        let name = placeholder.split(separator: ":", maxSplits: 1).last.map(String.init) ?? ""
        let template = "${\(placeholder)}"
        guard let origin else { throw .notAllowed(template: template, origin: "an unknown origin") }
        guard origin.isSecure || origin.isLoopback else { throw .cleartext(template: template, origin: origin.description) }
        guard allowedOrigins[name]?.contains(origin) == true else {
            throw .notAllowed(template: template, origin: origin.description)
        }
    }

    private func substitute(_ placeholder: Substring, in value: String) throws(TemplateError) -> String {
        if placeholder.hasPrefix("env:") {
            let name = String(placeholder.dropFirst(4))
            guard let found = environment[name] else { throw .missingEnvironment(name) }
            return found
        }
        if placeholder.hasPrefix("credential:") {
            let name = String(placeholder.dropFirst(11))
            guard !name.isEmpty, !name.contains("/"), name != "..", let folder = credentialsDirectory else {
                throw .missingCredential(name, directory: credentialsDirectory?.path)
            }
            guard var text = try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8) else {
                throw .missingCredential(name, directory: folder.path)
            }
            if text.hasSuffix("\n") { text.removeLast() }
            return text
        }
        return "${" + placeholder + "}"
    }
}

/// Why a header template could not be resolved, or may not be sent where it was going.
///
/// A struct over a private code, as ``QueueError`` is, so that a new kind is an addition, not a
/// break of every exhaustive `switch`. Match a kind with `catch TemplateError.Kind.notAllowed`,
/// or compare ``kind``; read the details from the properties.
public struct TemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong: one of the static members. Compare with `==`, or in a `switch` that has
    /// a `default` (kinds are added in new versions).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Code: String, Sendable, Hashable {
            case missingEnvironment, missingCredential, malformed, lineBreak, notAllowed, cleartext, invalidAllowance
        }

        fileprivate let code: Code

        /// An `${env:NAME}` placeholder names a variable that is not set.
        public static let missingEnvironment = Kind(code: .missingEnvironment)
        /// A `${credential:NAME}` placeholder names a credential that is not in the credentials
        /// directory, or no directory is set.
        public static let missingCredential = Kind(code: .missingCredential)
        /// A placeholder is not terminated.
        public static let malformed = Kind(code: .malformed)
        /// The resolved value holds a line break, which would split the header.
        public static let lineBreak = Kind(code: .lineBreak)
        /// The template may not be sent to that origin: the sending process did not allow it.
        public static let notAllowed = Kind(code: .notAllowed)
        /// The template would go over clear-text http to a host off this machine.
        public static let cleartext = Kind(code: .cleartext)
        /// An allowance that is not `NAME=ORIGIN` with an https (or loopback http) origin.
        public static let invalidAllowance = Kind(code: .invalidAllowance)

        /// The kind's name, such as `notAllowed`.
        public var description: String { code.rawValue }

        /// `catch TemplateError.Kind.notAllowed`: an error of this kind.
        public static func ~= (kind: Kind, error: any Error) -> Bool {
            (error as? TemplateError)?.kind == kind
        }

        /// The same, where the error's type is known (a `do throws(TemplateError)`).
        public static func ~= (kind: Kind, error: TemplateError) -> Bool {
            error.kind == kind
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// The variable or credential missing (`missingEnvironment`, `missingCredential`), or the
    /// template refused (`notAllowed`, `cleartext`).
    public let name: String?
    /// The header value or allowance text at fault (`malformed`, `lineBreak`, `invalidAllowance`).
    public let text: String?
    /// The origin refused (`notAllowed`, `cleartext`).
    public let origin: String?
    /// The credentials directory searched (`missingCredential`), when one was set.
    public let directory: String?

    private init(_ code: Kind.Code, name: String? = nil, text: String? = nil, origin: String? = nil, directory: String? = nil) {
        kind = Kind(code: code)
        self.name = name
        self.text = text
        self.origin = origin
        self.directory = directory
    }

    public static func missingEnvironment(_ name: String) -> TemplateError { TemplateError(.missingEnvironment, name: name) }
    public static func missingCredential(_ name: String, directory: String?) -> TemplateError {
        TemplateError(.missingCredential, name: name, directory: directory)
    }
    public static func malformed(_ value: String) -> TemplateError { TemplateError(.malformed, text: value) }
    public static func lineBreak(_ value: String) -> TemplateError { TemplateError(.lineBreak, text: value) }
    public static func notAllowed(template: String, origin: String) -> TemplateError { TemplateError(.notAllowed, name: template, origin: origin) }
    public static func cleartext(template: String, origin: String) -> TemplateError { TemplateError(.cleartext, name: template, origin: origin) }
    public static func invalidAllowance(_ text: String) -> TemplateError { TemplateError(.invalidAllowance, text: text) }

    public var description: String {
        let name = name ?? "?", origin = origin ?? "?", text = text ?? ""
        return switch kind.code {
        case .missingEnvironment: "environment variable \(name) is not set"
        case .missingCredential:
            directory.map { "credential \(name) not found in \($0)" } ?? "credential \(name) requested but CREDENTIALS_DIRECTORY is not set"
        case .malformed: "unterminated placeholder in header value \(text.debugDescription)"
        case .lineBreak: "a header template resolved to a value with a line break"
        case .notAllowed:
            "template \(name) is not allowed for \(origin); nothing was sent (allow it with --allow-secret NAME=\(origin) or SYNC_ALLOW_SECRETS)"
        case .cleartext:
            "template \(name) would travel in clear text to \(origin); secrets go over http only to loopback"
        case .invalidAllowance:
            "\(text.debugDescription) is not NAME=ORIGIN with an https origin (or http on loopback)"
        }
    }
}
