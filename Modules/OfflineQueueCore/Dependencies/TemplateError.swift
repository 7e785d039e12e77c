import Foundation
import HTTPCore

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

    /// A `missingEnvironment` error: the environment variable `name` is not set.
    public static func missingEnvironment(_ name: String) -> TemplateError { TemplateError(.missingEnvironment, name: name) }
    /// A `missingCredential` error: the credential `name` is not in `directory`; `nil` when no
    /// credentials directory is set.
    public static func missingCredential(_ name: String, directory: String?) -> TemplateError {
        TemplateError(.missingCredential, name: name, directory: directory)
    }
    /// A `malformed` error: the header value `value` holds a placeholder that is not terminated.
    public static func malformed(_ value: String) -> TemplateError { TemplateError(.malformed, text: value) }
    /// A `lineBreak` error: the header value `value`, as written, resolved to one with a line break.
    public static func lineBreak(_ value: String) -> TemplateError { TemplateError(.lineBreak, text: value) }
    /// A `notAllowed` error: the sending process does not allow `template` for `origin`.
    public static func notAllowed(template: String, origin: String) -> TemplateError { TemplateError(.notAllowed, name: template, origin: origin) }
    /// A `cleartext` error: `template` would go over clear-text http to `origin`, off this machine.
    public static func cleartext(template: String, origin: String) -> TemplateError { TemplateError(.cleartext, name: template, origin: origin) }
    /// An `invalidAllowance` error: `text` is not `NAME=ORIGIN` with an https (or loopback http)
    /// origin.
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
