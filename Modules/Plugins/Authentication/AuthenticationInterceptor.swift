public import HTTPCore

/// Adds credentials to each request and, on a 401, refreshes them once and retries once.
///
/// Concurrent calls that fail together share one refresh (single flight): the first failure
/// starts it, the others wait for it, and a call whose request was sent with an older
/// credential than the current one simply retries with the current one. A failed refresh
/// ends the calls in `NetworkError.unauthorized(_:)` with the original response: there is
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

    /// An interceptor that starts from `credential` and applies and refreshes it with
    /// `authenticator`, for endpoints in `scope`.
    public init(authenticator: Auth, credential: Auth.Credential, scope: PluginScope = .universal) {
        self.authenticator = authenticator
        self.scope = scope
        self.store = CredentialStore(credential)
    }

    /// The credential requests carry now.
    public var credential: Auth.Credential { store.current().credential }

    /// How many refreshes have completed.
    public var refreshCount: Int { store.current().generation }

    public func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        let (credential, generation) = store.current()
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
///
/// A lock rather than an actor: every call reads the credential, and a lock read costs a
/// fraction of an actor hop. The refresh task itself publishes its result, so exactly one
/// update follows one refresh however many callers wait for it.
final class CredentialStore<Credential: Sendable>: Sendable {
    private struct State {
        var credential: Credential
        var generation = 0
        var refreshing: Task<Credential, any Error>?
    }

    private let state: LockedBox<State>

    private enum Next { case ready(Credential), wait(Task<Credential, any Error>) }

    init(_ credential: Credential) { state = LockedBox(State(credential: credential)) }

    func current() -> (credential: Credential, generation: Int) {
        state.withLock { ($0.credential, $0.generation) }
    }

    /// A credential newer than `generation`: the current one if it already is, the result of
    /// the refresh in flight if there is one, or the result of a new refresh.
    func refreshed(after generation: Int, refresh: @escaping @Sendable (Credential) async throws -> Credential) async throws -> Credential {
        let next = state.withLock { state -> Next in
            if state.generation > generation { return .ready(state.credential) }
            if let refreshing = state.refreshing { return .wait(refreshing) }
            let old = state.credential
            let task = Task { [self] in
                do {
                    let fresh = try await refresh(old)
                    self.state.withLock { state in
                        state.credential = fresh
                        state.generation += 1
                        state.refreshing = nil
                    }
                    return fresh
                } catch {
                    self.state.withLock { $0.refreshing = nil }
                    throw error
                }
            }
            state.refreshing = task
            return .wait(task)
        }
        switch next {
        case .ready(let credential): return credential
        case .wait(let task): return try await task.value
        }
    }
}
