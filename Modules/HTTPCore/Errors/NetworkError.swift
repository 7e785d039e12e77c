public import Foundation
public import HTTPTypes

/// Everything that can go wrong with a call, as cases to switch on.
///
/// Status errors carry the response (status, headers and a body excerpt) so a caller can read
/// an error body; see ``StatusClassification`` for the table from status to case.
///
/// ```swift
/// do { let user: User = try await client.model(UserAPI.me) }
/// catch NetworkError.unauthorized { showLogin() }
/// catch NetworkError.transport(let failure) where failure.kind == .notConnected { showOffline() }
/// ```
public enum NetworkError: Error, Sendable {
    /// The request could not be built: a malformed URL, an unreadable file, a bad header.
    case invalidRequest(InvalidRequestReason)
    /// A body or query value could not be encoded.
    case encoding(EncodingFailure)
    /// 401.
    case unauthorized(Response<Data>)
    /// 403.
    case forbidden(Response<Data>)
    /// 404.
    case notFound(Response<Data>)
    /// Any other 4xx.
    case client(Response<Data>)
    /// Any 5xx.
    case server(Response<Data>)
    /// A status outside the endpoint's acceptable set that is neither 4xx nor 5xx
    /// (a 3xx that was not followed, or a 2xx the endpoint does not accept).
    case unacceptableStatus(Response<Data>)
    /// The body did not decode into the expected type.
    case decoding(DecodingFailure)
    /// The exchange failed below HTTP: no network, DNS, refused, reset, timeout, TLS, garbage.
    case transport(TransportFailure)
    /// A body was larger than the configured in-memory limit.
    case bodyTooLarge(limit: Int)
    /// More redirects than the client allows.
    case tooManyRedirects(limit: Int, lastURL: URL?)
    /// A redirect from `https` to `http` was refused: it would send the request, and any
    /// credential the next hop gets, in clear text. See ``ClientConfiguration/followsInsecureRedirects``.
    case insecureRedirect(from: URL, to: URL)
    /// The calling task was cancelled; the exchange was cancelled on the wire.
    case cancelled
    /// A reachability check said the network is gone; nothing was sent.
    case offline
    /// A plugin, interceptor or mapper threw an error of its own.
    case underlying(any Error)

    /// `error` as a `NetworkError`: itself when it is one, ``cancelled`` for a
    /// `CancellationError`, ``underlying(_:)`` otherwise.
    public init(_ error: any Error) {
        switch error {
        case let error as NetworkError: self = error
        case is CancellationError: self = .cancelled
        default: self = .underlying(error)
        }
    }

    /// The response that came with the error, when there was one.
    public var response: Response<Data>? {
        switch self {
        case .unauthorized(let r), .forbidden(let r), .notFound(let r), .client(let r), .server(let r),
             .unacceptableStatus(let r):
            r
        case .decoding(let failure):
            failure.response
        default:
            nil
        }
    }

    /// The HTTP status of ``response``.
    public var status: HTTPResponse.Status? { response?.status }

    /// Whether trying the same request again later may succeed: a status that
    /// ``StatusClassification/isRetryable(_:)`` names, transport failures other than TLS and
    /// malformed responses, and being offline.
    public var isRetryable: Bool {
        switch self {
        case .server(let response), .client(let response):
            StatusClassification.isRetryable(response.status.code)
        case .transport(let failure):
            failure.kind != .tls && failure.kind != .invalidResponse
        case .offline:
            true
        default:
            false
        }
    }

    /// Whether the failure only says the network (or the host) could not be reached, so the
    /// request never got to the server. The offline queue does not count such failures as
    /// attempts.
    public var isConnectivityFailure: Bool {
        switch self {
        case .offline:
            true
        case .transport(let failure):
            [.notConnected, .cannotConnect, .dns].contains(failure.kind)
        default:
            false
        }
    }
}

/// Why a request could not be built.
public enum InvalidRequestReason: Sendable, Hashable, CustomStringConvertible {
    /// The URL could not be formed from the base URL and path.
    case malformedURL(String)
    /// A file to send or to write does not exist or cannot be read or written.
    case unreadableFile(String, reason: String)
    /// A header name or value is not valid HTTP.
    case invalidHeader(String)
    /// Anything else, with an explanation.
    case other(String)

    public var description: String {
        switch self {
        case .malformedURL(let url): "malformed URL: \(url)"
        case .unreadableFile(let path, let reason): "cannot use file \(path): \(reason)"
        case .invalidHeader(let header): "invalid header: \(header)"
        case .other(let message): message
        }
    }
}

/// A value that could not be encoded, and where it sits.
public struct EncodingFailure: Sendable, Hashable, CustomStringConvertible {
    /// The path of keys to the value, such as `["user", "scores", "2"]`.
    public var keyPath: [String]
    /// What was wrong with it.
    public var message: String

    /// A failure for the value at `keyPath` (empty for the whole value), explained by `message`.
    public init(keyPath: [String], message: String) {
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        keyPath.isEmpty ? message : "\(keyPath.joined(separator: ".")): \(message)"
    }
}

/// A failure below HTTP.
public struct TransportFailure: Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure, for deciding what to do about it.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// No network: no route, no interface.
        case notConnected
        /// The exchange took longer than its timeout.
        case timedOut
        /// The host refused the connection or could not be reached.
        case cannotConnect
        /// The connection broke while the request or response was under way.
        case connectionLost
        /// The host name did not resolve.
        case dns
        /// The TLS handshake failed (an untrusted certificate, a protocol mismatch).
        case tls
        /// The peer sent something that is not valid HTTP.
        case invalidResponse
        /// Anything else.
        case other
    }

    /// What kind of failure.
    public var kind: Kind
    /// The underlying library's explanation.
    public var message: String

    /// A failure of `kind`, with the underlying library's `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}

extension NetworkError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidRequest(let reason): "invalid request: \(reason)"
        case .encoding(let failure): "encoding failed: \(failure)"
        case .unauthorized(let r): "unauthorized (\(r))"
        case .forbidden(let r): "forbidden (\(r))"
        case .notFound(let r): "not found (\(r))"
        case .client(let r): "client error (\(r))"
        case .server(let r): "server error (\(r))"
        case .unacceptableStatus(let r): "unacceptable status (\(r))"
        case .decoding(let failure): "decoding failed: \(failure)"
        case .transport(let failure): "transport failed: \(failure)"
        case .bodyTooLarge(let limit): "body larger than the \(limit)-byte limit"
        case .tooManyRedirects(let limit, let url): "more than \(limit) redirects (last: \(url?.redactingPassword ?? "?"))"
        case .insecureRedirect(let from, let to): "refused a redirect from \(from.redactingPassword) to \(to.redactingPassword): from https to clear-text http"
        case .cancelled: "cancelled"
        case .offline: "offline"
        case .underlying(let error): "\(error)"
        }
    }
}

extension NetworkError: LocalizedError {
    public var errorDescription: String? { description }
}
