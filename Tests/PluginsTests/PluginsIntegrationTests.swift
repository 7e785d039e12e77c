import AsyncHTTPClientTransport
import Foundation
import InMemoryTracing
import HTTPCore
import HTTPTypes
import Logging
import Plugins
import TestSupport
import Testing

/// Records the status of every exchange that reached the wire; placed inside the cache.
struct WireRecorder: Interceptor {
    let statuses = LockedStatuses()
    func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        let response = try await next(request)
        statuses.append(response.head.status.code)
        return response
    }
}

final class LockedStatuses: Sendable {
    private let values = LockedBox<[Int]>([])
    func append(_ value: Int) { values.withLock { $0.append(value) } }
    var all: [Int] { values.current }
}

/// httpbin's `/headers` answer.
struct HeadersEcho: Decodable { var headers: [String: String] }

/// Plugins over a real transport against httpbin and the loopback server.
@Suite(.serialized) struct PluginsIntegrationTests {
    func client(_ baseURL: URL, plugins: [any Plugin] = [], interceptors: [any Interceptor] = []) -> (APIClient, AsyncHTTPClientTransport) {
        // 100 concurrent calls: enough connections that none waits long for the pool, and a
        // generous bound for a machine busy with the other suites.
        let transport = AsyncHTTPClientTransport(configuration: .init(connectTimeout: .seconds(60), maximumConnectionsPerHost: 32))
        let configuration = ClientConfiguration(baseURL: baseURL, plugins: plugins, interceptors: interceptors)
        return (APIClient(configuration: configuration, transport: transport), transport)
    }

    @Test func hundredConcurrentCallsWithAnExpiredTokenRefreshOnceAgainstARealServer() async throws {
        let server = try await TestHTTPServer.start()
        server.route("/me") { request, writer in
            let authorized = request.values(of: "Authorization") == ["Bearer fresh"]
            try await writer.respond(status: authorized ? 200 : 401, body: Data((authorized ? "ok" : "").utf8))
        }
        let service = TokenService()
        let auth = AuthenticationInterceptor(
            authenticator: BearerAuthenticator { try await service.refresh($0, fail: false) },
            credential: BearerCredential(accessToken: "expired")
        )
        let (api, transport) = client(server.baseURL, interceptors: [auth])
        let codes = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<100 { group.addTask { try await api.send(Request<Void>.get("/me")).status.code } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(codes.count == 100 && codes.allSatisfy { $0 == 200 })
        #expect(service.count == 1)
        try await transport.shutdown()
        await server.shutdown()
    }

    @Test func httpbinBearerAndBasicAuth() async throws {
        let httpbin = try await HTTPBinServer.shared()
        let (api, transport) = client(httpbin.baseURL, plugins: [
            BearerTokenPlugin(scope: "bearer") { "token-123" },
            BasicAuthPlugin(user: "ada", password: "pw", scope: "basic"),
        ])
        var bearer = Request<Data>.get("/bearer")
        bearer.scopes = ["bearer"]
        #expect(try await api.send(bearer).status == .ok)
        var basic = Request<Data>.get("/basic-auth/ada/pw")
        basic.scopes = ["basic"]
        #expect(try await api.send(basic).status == .ok)
        await #expect(throws: NetworkError.self) { try await api.send(Request<Data>.get("/bearer")) }
        try await transport.shutdown()
    }

    @Test func scopedHeadersReachOnlyTheirScopeAtHttpbin() async throws {
        let httpbin = try await HTTPBinServer.shared()
        let (api, transport) = client(httpbin.baseURL, plugins: [
            APIKeyPlugin(key: "weather-key", scope: "weather"),
            HeadersPlugin([HTTPField.Name("X-Maps")!: "yes"], scope: "maps"),
            // httpbin hides X-Request-Id from its echo, so the id travels under another name here.
            RequestIDPlugin(headerName: HTTPField.Name("X-Correlation-ID")!),
        ])
        var weather = Request<HeadersEcho>.get("/headers")
        weather.scopes = ["weather"]
        var maps = Request<HeadersEcho>.get("/headers")
        maps.scopes = ["maps"]
        let weatherHeaders = try await api.send(weather).body.headers
        let mapsHeaders = try await api.send(maps).body.headers
        #expect(weatherHeaders["X-Api-Key"] == "weather-key" && weatherHeaders["X-Maps"] == nil)
        #expect(mapsHeaders["X-Maps"] == "yes" && mapsHeaders["X-Api-Key"] == nil)
        #expect(weatherHeaders["X-Correlation-Id"] != nil && weatherHeaders["X-Correlation-Id"] != mapsHeaders["X-Correlation-Id"])
        try await transport.shutdown()
    }

    @Test func httpbinCacheIsServedWithoutASecondRequestAndETagsRevalidate() async throws {
        let httpbin = try await HTTPBinServer.shared()
        let wire = WireRecorder()
        let (api, transport) = client(httpbin.baseURL, interceptors: [CacheInterceptor(), wire])

        let first = try await api.data(Request<Data>.get("/cache/60"))
        let second = try await api.data(Request<Data>.get("/cache/60"))
        #expect(first.body == second.body)
        #expect(wire.statuses.all == [200])

        let tagged = try await api.data(Request<Data>.get("/etag/v1"))
        let revalidated = try await api.data(Request<Data>.get("/etag/v1"))
        #expect(revalidated.status == .ok && revalidated.body == tagged.body)
        #expect(wire.statuses.all == [200, 200, 304])

        _ = try await api.data(Request<Data>.get("/response-headers?Cache-Control=no-store"))
        _ = try await api.data(Request<Data>.get("/response-headers?Cache-Control=no-store"))
        #expect(wire.statuses.all == [200, 200, 304, 200, 200])
        try await transport.shutdown()
    }

    @Test func logsOfARealCallCarryNoSecrets() async throws {
        let httpbin = try await HTTPBinServer.shared()
        let logs = CapturedLogs()
        let (api, transport) = client(httpbin.baseURL, plugins: [LoggingPlugin(logger: logs.logger())])
        let headers: HTTPFields = [.authorization: "Bearer tok-SECRET-1", .cookie: "sid=cookie-SECRET-2"]
        _ = try await api.data(Request<Data>.get("/get?api_key=query-SECRET-3&page=2", headers: headers))
        _ = try await api.data(Request<Data>.get("/response-headers?Set-Cookie=set-SECRET-4"))
        let text = logs.text
        #expect(text.contains("← 200 GET http://127.0.0.1:"))
        #expect(text.contains("Set-Cookie: <redacted>"))
        // set-SECRET-4 comes back as a Set-Cookie response field (the query names it openly).
        #expect(!text.contains("Set-Cookie: set-SECRET-4"))
        for secret in ["tok-SECRET-1", "cookie-SECRET-2", "query-SECRET-3"] {
            #expect(!text.contains(secret), "\(secret) leaked into \(text)")
        }
        try await transport.shutdown()
    }

    @Test func tracedCallArrivesWithAValidTraceparent() async throws {
        let httpbin = try await HTTPBinServer.shared()
        let tracer = W3CTestTracer()
        let (api, transport) = client(httpbin.baseURL, interceptors: [TracingInterceptor(tracer: tracer)])
        let headers = try await api.send(Request<HeadersEcho>.get("/headers")).body.headers
        let traceparent = try #require(headers["Traceparent"])
        #expect(traceparent.wholeMatch(of: /00-[0-9a-f]{32}-[0-9a-f]{16}-01/) != nil)
        #expect(tracer.base.finishedSpans.first.map { "00-\($0.spanContext.traceID)-\($0.spanContext.spanID)-01" } == traceparent)
        try await transport.shutdown()
    }
}
