public import Foundation

/// Header values with placeholders resolved when the request is sent, so that no secret is
/// kept at rest in the queue:
///
/// - `${env:NAME}`: the environment variable `NAME` of the process that sends.
/// - `${credential:NAME}`: the file `NAME` in `$CREDENTIALS_DIRECTORY` (a systemd credential,
///   `LoadCredential=`), with one trailing newline removed.
///
/// ```swift
/// // stored as written, sent as "Bearer eyJ..."
/// try await queue.enqueue(method: "POST", url: "https://api.example.com/events",
///                         headers: [("Authorization", "Bearer ${credential:api-token}")])
/// ```
public struct HeaderTemplates: Sendable {
    /// Where `${env:…}` looks; the process environment by default.
    public var environment: [String: String]
    /// Where `${credential:…}` looks; `$CREDENTIALS_DIRECTORY` by default.
    public var credentialsDirectory: URL?

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

    /// `value` with every placeholder replaced.
    ///
    /// - Throws: ``TemplateError`` naming the variable or credential that is missing.
    public func resolve(_ value: String) throws(TemplateError) -> String {
        guard Self.containsPlaceholder(value) else { return value }
        var result = ""
        var rest = Substring(value)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw .malformed(value)
            }
            let inside = rest[start.upperBound..<end]
            result += try substitute(inside, in: value)
            rest = rest[rest.index(after: end)...]
        }
        result += rest
        guard !result.contains("\r"), !result.contains("\n") else { throw .lineBreak(value) }
        return result
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

/// Why a header template could not be resolved.
public enum TemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    case missingEnvironment(String)
    case missingCredential(String, directory: String?)
    case malformed(String)
    case lineBreak(String)

    public var description: String {
        switch self {
        case .missingEnvironment(let name): "environment variable \(name) is not set"
        case .missingCredential(let name, let directory):
            directory.map { "credential \(name) not found in \($0)" } ?? "credential \(name) requested but CREDENTIALS_DIRECTORY is not set"
        case .malformed(let value): "unterminated placeholder in header value \(value.debugDescription)"
        case .lineBreak: "a header template resolved to a value with a line break"
        }
    }
}
