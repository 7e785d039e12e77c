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

    /// Templates that read `environment` and `credentialsDirectory` (by default the process's
    /// environment and `$CREDENTIALS_DIRECTORY`), allowed for no origin until `allow(_:for:)` is
    /// called.
    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        credentialsDirectory: URL? = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"].map { URL(fileURLWithPath: $0, isDirectory: true) }
    ) {
        self.environment = environment
        self.credentialsDirectory = credentialsDirectory
    }

    /// Whether `value` holds a placeholder: a template, or a value from a parent's response
    /// (``ResponseReference``, put in before templates are resolved).
    public static func containsPlaceholder(_ value: String) -> Bool {
        // Most values have no `$` at all: a byte scan answers before any substring search.
        guard value.utf8.contains(UInt8(ascii: "$")) else { return false }
        return value.contains("${env:") || value.contains("${credential:") || value.contains(ResponseReference.opening)
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
