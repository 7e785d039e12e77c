public import HTTPCore

/// Adds credentials to each request and, on a 401, refreshes them once and retries once.
///
/// Concurrent calls that fail together share one refresh (single flight): the first failure
/// starts it, the others wait for it, and a call whose request was sent with an older
/// credential than the current one simply retries with the current one. A failed refresh
/// ends the calls in ``NetworkError/unauthorized(_:)`` with the original response: there is
/// never a loop.
///
/// ```swift
/// let auth = AuthenticationInterceptor(
///     authenticator: BearerAuthenticator { old in try await tokens.refresh(old) },
///     credential: BearerCredential(accessToken: saved.access, refreshToken: saved.refresh),
///     scope: "api"
/// )
/// configuration.interceptors.append(auth)
/// ```
public final class AuthenticationInterceptor<Auth: Authenticator>: Interceptor {
    /// Applies and refreshes credentials.
    public let authenticator: Auth
    public let scope: PluginScope
    private let store: CredentialStore<Auth.Credential>

    public init(authenticator: Auth, credential: Auth.Credential, scope: PluginScope = .universal) {
        self.authenticator = authenticator
        self.scope = scope
        self.store = CredentialStore(credential)
    }

    /// The credential requests carry now.
    public var credential: Auth.Credential {
        get async { await store.current().credential }
    }

    /// How many refreshes have completed.
    public var refreshCount: Int {
        get async { await store.current().generation }
    }

    public func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        let (credential, generation) = await store.current()
        var authenticated = request
        authenticator.apply(credential, to: &authenticated)
        let response = try await next(authenticated)
        guard authenticator.isAuthenticationFailure(response.head) else { return response }

        let fresh: Auth.Credential
        do {
            fresh = try await store.refreshed(after: generation) { [authenticator] old in
                try await authenticator.refresh(old)
            }
        } catch {
            return response
        }
        await response.body.discard()
        var retried = request
        authenticator.apply(fresh, to: &retried)
        return try await next(retried)
    }
}

/// The current credential, its generation, and the refresh in flight.
actor CredentialStore<Credential: Sendable> {
    private var credential: Credential
    private var generation = 0
    private var refreshing: Task<Credential, any Error>?

    init(_ credential: Credential) { self.credential = credential }

    func current() -> (credential: Credential, generation: Int) { (credential, generation) }

    /// A credential newer than `generation`: the current one if it already is, the result of
    /// the refresh in flight if there is one, or the result of a new refresh.
    func refreshed(after generation: Int, refresh: @escaping @Sendable (Credential) async throws -> Credential) async throws -> Credential {
        if self.generation > generation { return credential }
        if let refreshing { return try await refreshing.value }
        let old = credential
        let task = Task { try await refresh(old) }
        refreshing = task
        do {
            let fresh = try await task.value
            credential = fresh
            self.generation += 1
            refreshing = nil
            return fresh
        } catch {
            refreshing = nil
            throw error
        }
    }
}
