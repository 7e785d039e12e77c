import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import InMemoryTracing
import Logging
import MetricsTestKit
import Plugins
import Testing
import TestSupport
import Tracing

@Suite struct ObservabilityTests {
    @Test func logsCarryNoSecrets() async throws {
        let logs = CapturedLogs()
        let stub = StubTransport()
        stub.on(.get, "/account", respond: StubTransport.Stub(headers: [.setCookie: "session=s3cr3t-cookie"], body: Data("{}".utf8)))
        let client = makeClient(stub, plugins: [LoggingPlugin(logger: logs.logger(), bodyLimit: 64)])
        let headers: HTTPFields = [.authorization: "Bearer tok-SECRET-123", .cookie: "sid=cookie-SECRET-456", HTTPField.Name("X-API-Key")!: "hdr-SECRET-789"]
        try await client.send(Request<Void>.get("/account?api_key=query-SECRET-000&page=2", headers: headers))
        let text = logs.text
        for secret in ["tok-SECRET-123", "cookie-SECRET-456", "hdr-SECRET-789", "query-SECRET-000", "s3cr3t-cookie"] {
            #expect(!text.contains(secret), "\(secret) leaked into: \(text)")
        }
        #expect(text.contains("GET https://api.test/account?api_key=<redacted>&page=2"))
        #expect(text.contains("← 200"))
        #expect(text.contains("status=200"))
    }

    @Test func failuresAreLoggedWithTheirURL() async throws {
        let logs = CapturedLogs()
        let stub = StubTransport(fallback: .failure(.transport(TransportFailure(.cannotConnect, "refused"))))
        let client = makeClient(stub, plugins: [LoggingPlugin(logger: logs.logger())])
        _ = try? await client.send(Request<Void>.get("/down?token=abc"))
        #expect(logs.all.contains { $0.hasPrefix("error ✕ GET https://api.test/down?token=<redacted>") })
    }

    @Test func tracedCallCarriesAValidTraceparent() async throws {
        let tracer = W3CTestTracer()
        let stub = StubTransport(fallback: .status(200))
        let client = makeClient(stub, interceptors: [TracingInterceptor(tracer: tracer)])
        try await client.send(Request<Void>.get("/traced?key=hidden"))
        let header = try #require(stub.recordedRequests.first?.head.headerFields[HTTPField.Name("traceparent")!])
        let parts = header.split(separator: "-").map(String.init)
        #expect(parts.count == 4 && parts[0] == "00" && parts[1].count == 32 && parts[2].count == 16 && parts[3] == "01")
        #expect(parts.dropFirst().dropLast().allSatisfy { $0.allSatisfy(\.isHexDigit) })
        let span = try #require(tracer.base.finishedSpans.first)
        #expect(span.spanContext.traceID == parts[1] && span.spanContext.spanID == parts[2])
        #expect(span.kind == .client)
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        #expect(span.attributes["url.full"]?.toSpanAttribute() == .string("https://api.test/traced?key=<redacted>"))
    }

    @Test func metricsAreRecordedPerEndpointAndStatusClass() async throws {
        let metrics = TestMetrics()
        let stub = StubTransport()
        stub.on(.get, "/ok", respond: .status(200))
        stub.on(.get, "/broken", respond: .status(503))
        let client = makeClient(stub, plugins: [MetricsPlugin(factory: metrics)])
        try await client.send(Request<Void>.get("/ok"))
        try await client.send(Request<Void>.get("/ok"))
        _ = try? await client.send(Request<Void>.get("/broken"))
        let ok = try metrics.expectCounter("courier_http_requests_total", [("endpoint", "GET /ok"), ("status_class", "2xx")])
        #expect(ok.totalValue == 2)
        let broken = try metrics.expectCounter("courier_http_requests_total", [("endpoint", "GET /broken"), ("status_class", "5xx")])
        #expect(broken.totalValue == 1)
        let timer = try metrics.expectTimer("courier_http_request_duration", [("endpoint", "GET /ok")])
        #expect(timer.values.count == 2)
    }

    @Test("identifier segments read {id} in the endpoint label: digits, UUIDs, long hex; other segments stay")
    func identifiersCollapse() async throws {
        let metrics = TestMetrics()
        let stub = StubTransport()
        for path in ["/users/42/avatar", "/users/43/avatar", "/orders/1b4e28ba-2fa1-11d2-883f-0016a4b1f2c3", "/blobs/0123456789abcdef0123", "/v2/users/me"] {
            stub.on(.get, path, respond: .status(200))
        }
        let client = makeClient(stub, plugins: [MetricsPlugin(factory: metrics)])
        for path in ["/users/42/avatar", "/users/43/avatar", "/orders/1b4e28ba-2fa1-11d2-883f-0016a4b1f2c3", "/blobs/0123456789abcdef0123", "/v2/users/me"] {
            try await client.send(Request<Void>.get(path))
        }
        #expect(try metrics.expectCounter("courier_http_requests_total", [("endpoint", "GET /users/{id}/avatar"), ("status_class", "2xx")]).totalValue == 2)
        #expect(try metrics.expectCounter("courier_http_requests_total", [("endpoint", "GET /orders/{id}"), ("status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_http_requests_total", [("endpoint", "GET /blobs/{id}"), ("status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_http_requests_total", [("endpoint", "GET /v2/users/me"), ("status_class", "2xx")]).totalValue == 1)
        #expect(metrics.counters.count == 4)
        #expect(MetricsPlugin.collapsingIdentifiers("GET /a/12/b/34") == "GET /a/{id}/b/{id}")
        #expect(MetricsPlugin.collapsingIdentifiers("GET /") == "GET /")
        #expect(MetricsPlugin.collapsingIdentifiers("GET /abcdef") == "GET /abcdef")
        #expect(MetricsPlugin.collapsingIdentifiers("named endpoint") == "named endpoint")
        // Off: the names as they are.
        let plain = TestMetrics()
        try await makeClient(stub, plugins: [MetricsPlugin(factory: plain, collapsesIdentifiers: false)]).send(Request<Void>.get("/users/42/avatar"))
        #expect(try plain.expectCounter("courier_http_requests_total", [("endpoint", "GET /users/42/avatar"), ("status_class", "2xx")]).totalValue == 1)
    }

    @Test("past endpointLimit distinct names, the rest share endpoint=other, said once in the log; series stay bounded")
    func endpointsAreBounded() async throws {
        let metrics = TestMetrics()
        let logs = CapturedLogs()
        let stub = StubTransport()
        let names = (0..<50).map { "/route-\(Character(UnicodeScalar(UInt8(97 + $0 % 26))))\($0 / 26 == 0 ? "" : "x")" }
        for name in names { stub.on(.get, name, respond: .status(200)) }
        let client = makeClient(stub, plugins: [MetricsPlugin(factory: metrics, endpointLimit: 3, logger: logs.logger())])
        for name in names { try await client.send(Request<Void>.get(name)) }
        let endpoints = Set(metrics.counters.compactMap { counter in counter.dimensions.first { $0.0 == "endpoint" }?.1 })
        #expect(endpoints == ["GET /route-a", "GET /route-b", "GET /route-c", "other"])
        #expect(try metrics.expectCounter("courier_http_requests_total", [("endpoint", "other"), ("status_class", "2xx")]).totalValue == 47)
        let warnings = logs.all.filter { $0.contains("endpoint limit") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("first_refused=GET /route-d") == true)
    }
}
