public import HTTPCore
public import HTTPTypes

/// Knows how to attach a credential to a request and how to get a fresh one.
///
/// ``AuthenticationInterceptor`` drives it: it applies the current credential to each
/// request, and on an authentication failure (401 by default) refreshes once and retries once.
///
/// ```swift
/// struct TokenAuthenticator: Authenticator {
///     let auth: AuthService
///     func apply(_ credential: BearerCredential, to request: inout PreparedRequest) {
///         request.headers[.authorization] = "Bearer \(credential.accessToken)"
///     }
///     func refresh(_ credential: BearerCredential) async throws -> BearerCredential {
///         try await auth.refresh(using: credential.refreshToken)
///     }
/// }
/// ```
public protocol Authenticator: Sendable {
    /// What authenticates a request: a token pair, a key.
    associatedtype Credential: Sendable

    /// Writes `credential` into `request`.
    func apply(_ credential: Credential, to request: inout PreparedRequest)

    /// Gets a new credential after `credential` was refused. Called once for any number of
    /// concurrent failures; throwing ends those calls with `NetworkError.unauthorized(_:)`.
    func refresh(_ credential: Credential) async throws -> Credential

    /// Whether `response` says the credential was refused; by default, a 401.
    func isAuthenticationFailure(_ response: HTTPResponse) -> Bool
}

extension Authenticator {
    public func isAuthenticationFailure(_ response: HTTPResponse) -> Bool {
        response.status == .unauthorized
    }
}

/// An OAuth-style bearer credential.
public struct BearerCredential: Sendable, Hashable {
    /// Sent as `Authorization: Bearer <accessToken>`.
    public var accessToken: String
    /// Used by the refresh closure, never sent on ordinary requests.
    public var refreshToken: String?

    /// A credential of `accessToken` and, when the server issued one, `refreshToken`.
    public init(accessToken: String, refreshToken: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }
}

/// A ready ``Authenticator`` for bearer tokens with a refresh closure.
public struct BearerAuthenticator: Authenticator {
    /// Exchanges a refused credential for a fresh one.
    public var refreshCredential: @Sendable (BearerCredential) async throws -> BearerCredential

    /// An authenticator that sends the access token as `Authorization: Bearer` and calls
    /// `refresh` with a refused credential to get a fresh one.
    public init(refresh: @escaping @Sendable (BearerCredential) async throws -> BearerCredential) {
        self.refreshCredential = refresh
    }

    public func apply(_ credential: BearerCredential, to request: inout PreparedRequest) {
        request.headers[.authorization] = "Bearer \(credential.accessToken)"
    }

    public func refresh(_ credential: BearerCredential) async throws -> BearerCredential {
        try await refreshCredential(credential)
    }
}
