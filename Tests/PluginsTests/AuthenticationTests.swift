import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Plugins
import Testing

/// Counts refreshes; each refresh takes a little while so concurrent failures overlap it.
final class TokenService: Sendable {
    private let refreshes = LockedBox(0)
    var count: Int { refreshes.current }
    private func increment() { refreshes.withLock { $0 += 1 } }

    func refresh(_ old: BearerCredential, fail: Bool) async throws -> BearerCredential {
        try await Task.sleep(for: .milliseconds(50))
        increment()
        if fail { throw URLError(.userAuthenticationRequired) }
        return BearerCredential(accessToken: "fresh", refreshToken: old.refreshToken)
    }
}

@Suite struct AuthenticationTests {
    /// 401 unless the request carries `Bearer fresh`.
    func protectedStub() -> StubTransport {
        let stub = StubTransport()
        stub.on(.get, "/me") { request in
            request.head.headerFields[.authorization] == "Bearer fresh" ? .json(#"{"ok":true}"#) : .status(401)
        }
        return stub
    }

    @Test func hundredConcurrentCallsWithAnExpiredTokenRefreshOnce() async throws {
        let service = TokenService()
        let auth = AuthenticationInterceptor(
            authenticator: BearerAuthenticator { try await service.refresh($0, fail: false) },
            credential: BearerCredential(accessToken: "expired", refreshToken: "r1")
        )
        let client = makeClient(protectedStub(), interceptors: [auth])
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<100 { group.addTask { try await client.send(Request<Void>.get("/me")).status.code } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 100 && statuses.allSatisfy { $0 == 200 })
        #expect(service.count == 1)
        #expect(auth.refreshCount == 1)
        #expect(auth.credential.accessToken == "fresh")
    }

    @Test func failedRefreshEndsInUnauthorizedNotALoop() async throws {
        let service = TokenService()
        let stub = protectedStub()
        let auth = AuthenticationInterceptor(
            authenticator: BearerAuthenticator { try await service.refresh($0, fail: true) },
            credential: BearerCredential(accessToken: "expired")
        )
        let client = makeClient(stub, interceptors: [auth])
        await #expect {
            try await client.send(Request<Void>.get("/me"))
        } throws: { error in
            if case NetworkError.unauthorized = error { return true }
            return false
        }
        #expect(service.count == 1)
        #expect(stub.recordedRequests.count == 1)
    }

    @Test func scopedCredentialsGoOnlyToTheirBackend() async throws {
        struct Weather: Endpoint {
            var path: String { "/forecast" }
            var method: HTTPRequest.Method { .get }
            var scopes: Set<PluginScope> { ["weather"] }
        }
        struct Maps: Endpoint {
            var path: String { "/tiles" }
            var method: HTTPRequest.Method { .get }
            var scopes: Set<PluginScope> { ["maps"] }
        }
        let stub = StubTransport(fallback: .status(200))
        let client = makeClient(stub, plugins: [
            APIKeyPlugin(key: "w-key", location: .query("api_key"), scope: "weather"),
            BasicAuthPlugin(user: "maps", password: "secret", scope: "maps"),
            UserAgentPlugin(),
            RequestIDPlugin(),
        ])
        try await client.send(Weather())
        try await client.send(Maps())
        let heads = stub.recordedRequests.map(\.head)
        #expect(heads[0].path == "/forecast?api_key=w-key")
        #expect(heads[0].headerFields[.authorization] == nil)
        #expect(heads[1].path == "/tiles")
        #expect(heads[1].headerFields[.authorization] == "Basic bWFwczpzZWNyZXQ=")
        #expect(heads.allSatisfy { $0.headerFields[.userAgent] == UserAgentPlugin.defaultValue })
        let ids = heads.compactMap { $0.headerFields[HTTPField.Name("X-Request-ID")!] }
        #expect(ids.count == 2 && Set(ids).count == 2)
    }

    @Test func bearerTokenPluginFetchesTheTokenPerCall() async throws {
        let stub = StubTransport(fallback: .status(200))
        let client = makeClient(stub, plugins: [BearerTokenPlugin { "t-\(stubCount(stub))" }])
        try await client.send(Request<Void>.get("/a"))
        try await client.send(Request<Void>.get("/b"))
        #expect(stub.recordedRequests.map { $0.head.headerFields[.authorization] } == ["Bearer t-0", "Bearer t-1"])
    }
}

private func stubCount(_ stub: StubTransport) -> Int { stub.recordedRequests.count }
