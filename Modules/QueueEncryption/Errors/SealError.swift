/// Why a keyring could not be read or written, or a sealed value could not be opened.
///
/// No error carries key bytes or plaintext: only key ids, key-check values, paths, modes,
/// line numbers, field names and chunk numbers.
///
/// A struct over a private code, as `QueueError` is, so that a new kind is an addition, not a
/// break of every exhaustive `switch`. Match a kind with `catch`, or compare ``kind`` with `==`:
///
/// ```swift
/// do {
///     let keyring = try Keyring.load(path: "/etc/courier/queue.keyring")
/// } catch SealError.Kind.unsafeKeyring {
///     // chmod 600 the file, then try again
/// }
/// ```
public struct SealError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong: one of the static members. Compare with `==`, or in a `switch` that has
    /// a `default` (kinds are added in new versions).
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Code: String, Sendable, Hashable {
            case unknownKey, wrongKey, authenticationFailed, truncated, trailingData, unsupportedVersion, invalidSeal
            case unsafeKeyring, malformedKeyring, keyringExists, keyringIO, missingCredential
        }

        fileprivate let code: Code

        /// The keyring holds no key with this id (``SealError/keyID``).
        public static let unknownKey = Kind(code: .unknownKey)
        /// The keyring's key with this id has other bytes than the key that sealed: its key-check
        /// value differs from the one recorded (``SealError/keyID``).
        public static let wrongKey = Kind(code: .wrongKey)
        /// A sealed value, or one chunk of it, does not authenticate: it was changed, moved to
        /// another entry, queue or field, or its salt or key id was changed
        /// (``SealError/field``, ``SealError/chunk``).
        public static let authenticationFailed = Kind(code: .authenticationFailed)
        /// A sealed value ends before its final chunk: chunks were cut off its end
        /// (``SealError/field``, ``SealError/chunk`` is the last chunk present).
        public static let truncated = Kind(code: .truncated)
        /// Data follows a sealed value's full final chunk (``SealError/field``,
        /// ``SealError/chunk`` is the final chunk). After a shorter final chunk, extra data
        /// fails as `authenticationFailed`.
        public static let trailingData = Kind(code: .trailingData)
        /// The entry was sealed with a format version this one does not know
        /// (``SealError/version``).
        public static let unsupportedVersion = Kind(code: .unsupportedVersion)
        /// An entry's clear seal parameters are not in the form Courier writes, such as a salt
        /// of the wrong length (``SealError/reason``).
        public static let invalidSeal = Kind(code: .invalidSeal)
        /// The keyring file is a symbolic link, not a regular file, owned by another user, or
        /// open to other users (``SealError/path``, ``SealError/mode``, ``SealError/reason``).
        public static let unsafeKeyring = Kind(code: .unsafeKeyring)
        /// The keyring's text is not a valid keyring (``SealError/path``, ``SealError/line``,
        /// ``SealError/reason``).
        public static let malformedKeyring = Kind(code: .malformedKeyring)
        /// A new keyring was to be created where a file already exists (``SealError/path``).
        public static let keyringExists = Kind(code: .keyringExists)
        /// Reading or writing the keyring file failed (``SealError/path``, ``SealError/reason``).
        public static let keyringIO = Kind(code: .keyringIO)
        /// A keyring was to come from systemd's credentials, but `$CREDENTIALS_DIRECTORY` is not
        /// set or holds no credential of that name (``SealError/path``, ``SealError/reason``).
        public static let missingCredential = Kind(code: .missingCredential)

        /// The kind's name, such as `wrongKey`.
        public var description: String { code.rawValue }

        /// `catch SealError.Kind.wrongKey`: an error of this kind.
        public static func ~= (kind: Kind, error: any Error) -> Bool {
            (error as? SealError)?.kind == kind
        }

        /// The same, where the error's type is known (a `do throws(SealError)`).
        public static func ~= (kind: Kind, error: SealError) -> Bool {
            error.kind == kind
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// The key, for `unknownKey` and `wrongKey`.
    public let keyID: KeyID?
    /// The field, for `authenticationFailed`, `truncated` and `trailingData`.
    public let field: SealedField?
    /// The chunk (counting from 0) where a sealed value failed, for `authenticationFailed`,
    /// `truncated` and `trailingData`.
    public let chunk: Int?
    /// The format version found, for `unsupportedVersion`.
    public let version: Int?
    /// The keyring file, or the credential's path, for the keyring kinds.
    public let path: String?
    /// The file's permission bits, for `unsafeKeyring` when they are the reason.
    public let mode: UInt32?
    /// The line (counting from 1), for `malformedKeyring` when one line is at fault.
    public let line: Int?
    /// Why, in words, for `invalidSeal`, `unsafeKeyring`, `malformedKeyring`, `keyringIO` and
    /// `missingCredential`.
    public let reason: String?

    private init(
        _ code: Kind.Code, keyID: KeyID? = nil, field: SealedField? = nil, chunk: Int? = nil, version: Int? = nil,
        path: String? = nil, mode: UInt32? = nil, line: Int? = nil, reason: String? = nil
    ) {
        kind = Kind(code: code)
        self.keyID = keyID
        self.field = field
        self.chunk = chunk
        self.version = version
        self.path = path
        self.mode = mode
        self.line = line
        self.reason = reason
    }

    /// An `unknownKey` error: the keyring holds no key `id`.
    public static func unknownKey(_ id: KeyID) -> SealError { SealError(.unknownKey, keyID: id) }
    /// A `wrongKey` error: the keyring's key `id` is not the key that sealed.
    public static func wrongKey(_ id: KeyID) -> SealError { SealError(.wrongKey, keyID: id) }
    /// An `authenticationFailed` error: chunk `chunk` of the sealed `field` does not
    /// authenticate.
    public static func authenticationFailed(field: SealedField, chunk: Int) -> SealError {
        SealError(.authenticationFailed, field: field, chunk: chunk)
    }
    /// A `truncated` error: the sealed `field` ends after chunk `chunk`, before its final chunk.
    public static func truncated(field: SealedField, chunk: Int) -> SealError { SealError(.truncated, field: field, chunk: chunk) }
    /// A `trailingData` error: data follows the final chunk, `chunk`, of the sealed `field`.
    public static func trailingData(field: SealedField, chunk: Int) -> SealError { SealError(.trailingData, field: field, chunk: chunk) }
    /// An `unsupportedVersion` error: the entry was sealed with format `version`.
    public static func unsupportedVersion(_ version: Int) -> SealError { SealError(.unsupportedVersion, version: version) }
    /// An `invalidSeal` error: an entry's seal parameters are not in Courier's form, for
    /// `reason`.
    public static func invalidSeal(_ reason: String) -> SealError { SealError(.invalidSeal, reason: reason) }
    /// An `unsafeKeyring` error: the keyring at `path` is refused for `reason`, with its
    /// permission bits `mode` when they are the reason.
    public static func unsafeKeyring(path: String, mode: UInt32? = nil, reason: String) -> SealError {
        SealError(.unsafeKeyring, path: path, mode: mode, reason: reason)
    }
    /// A `malformedKeyring` error: the keyring at `path` does not parse, for `reason`; `line`
    /// (from 1) is the line at fault, or `nil` when no one line is.
    public static func malformedKeyring(path: String, line: Int?, reason: String) -> SealError {
        SealError(.malformedKeyring, path: path, line: line, reason: reason)
    }
    /// A `keyringExists` error: a new keyring was to be written where the file `path` exists.
    public static func keyringExists(path: String) -> SealError { SealError(.keyringExists, path: path) }
    /// A `keyringIO` error: reading or writing the keyring at `path` failed, for `reason`.
    public static func keyringIO(path: String, reason: String) -> SealError { SealError(.keyringIO, path: path, reason: reason) }
    /// A `missingCredential` error: no systemd credential at `path`, for `reason`.
    public static func missingCredential(path: String, reason: String) -> SealError {
        SealError(.missingCredential, path: path, reason: reason)
    }

    public var description: String {
        let id = keyID?.description ?? "?", field = field?.description ?? "?", chunk = chunk.map(String.init) ?? "?"
        let path = path ?? "?", reason = reason ?? ""
        return switch kind.code {
        case .unknownKey: "the keyring holds no key \(id)"
        case .wrongKey: "key \(id) in the keyring is not the key that sealed: its key-check value differs"
        case .authenticationFailed: "the sealed \(field) does not authenticate (chunk \(chunk)): it was changed or moved"
        case .truncated: "the sealed \(field) ends after chunk \(chunk), before its final chunk"
        case .trailingData: "data follows the final chunk (\(chunk)) of the sealed \(field)"
        case .unsupportedVersion: "sealed with format version \(version ?? 0), which this version does not know"
        case .invalidSeal: "invalid seal parameters: \(reason)"
        case .unsafeKeyring:
            if let mode { "refusing keyring \(path) (mode \(String(mode, radix: 8))): \(reason)" } else { "refusing keyring \(path): \(reason)" }
        case .malformedKeyring: if let line { "\(path), line \(line): \(reason)" } else { "\(path): \(reason)" }
        case .keyringExists: "\(path) already exists; a new keyring is never written over a file"
        case .keyringIO: "cannot read or write keyring \(path): \(reason)"
        case .missingCredential: "no keyring credential at \(path): \(reason)"
        }
    }
}
