import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing

@Suite struct RedirectTests {
    @Test func redirectChainIsFollowedAndCounted() async throws {
        let stub = StubTransport()
        stub.on(.get, "/a", respond: .status(302, headers: [.location: "/v1/b"]))
        stub.on(.get, "/b", respond: .status(301, headers: [.location: "c"]))
        stub.on(.get, "/c", respond: .json(#"{"id":1,"name":"end"}"#))
        let response = try await makeClient(stub).response(Request<User>.get("/a"), as: User.self)
        #expect(response.body.name == "end")
        #expect(response.metrics.redirects == 2)
        #expect(response.request.path == "/v1/c")
    }

    @Test func credentialsAreDroppedWhenTheHostChanges() async throws {
        let stub = StubTransport()
        stub.on(.get, "/same", respond: .status(307, headers: [.location: "https://api.test/v1/next"]))
        stub.on(.get, "/next", respond: .status(302, headers: [.location: "https://elsewhere.test/final"]))
        stub.on(.get, "/final", respond: .status(200))
        let headers: HTTPFields = [.authorization: "Bearer secret", .cookie: "session=1", .accept: "*/*"]
        try await makeClient(stub).send(Request<Void>.get("/same", headers: headers))
        let hops = stub.recordedRequests.map(\.head)
        #expect(hops.count == 3)
        #expect(hops[1].headerFields[.authorization] == "Bearer secret")
        #expect(hops[2].authority == "elsewhere.test")
        #expect(hops[2].headerFields[.authorization] == nil)
        #expect(hops[2].headerFields[.cookie] == nil)
        #expect(hops[2].headerFields[.accept] == "*/*")
    }

    @Test func seeOtherTurnsPostIntoGetAnd307KeepsTheBody() async throws {
        let stub = StubTransport()
        stub.on(.post, "/form", respond: .status(303, headers: [.location: "/v1/result"]))
        stub.on(.get, "/result", respond: .status(200))
        stub.on(.put, "/doc", respond: .status(307, headers: [.location: "/v1/doc2"]))
        stub.on(.put, "/doc2", respond: .status(204))
        let client = makeClient(stub)
        try await client.send(Request<Void>.post("/form", body: .text("x=1")))
        try await client.send(Request<Void>.put("/doc", body: .text("payload")))
        let recorded = stub.recordedRequests
        #expect(recorded[1].head.method == .get)
        #expect(recorded[1].body == nil || recorded[1].body?.isEmpty == true)
        #expect(recorded[1].head.headerFields[.contentType] == nil)
        #expect(recorded[3].head.method == .put)
        #expect(recorded[3].body == Data("payload".utf8))
    }

    @Test func tooManyRedirectsIsAnError() async throws {
        let stub = StubTransport()
        stub.on(.get, "/loop", respond: .status(302, headers: [.location: "/v1/loop"]))
        await #expect {
            try await makeClient(stub) { $0.maxRedirects = 3 }.send(Request<Void>.get("/loop"))
        } throws: { error in
            if case NetworkError.tooManyRedirects(limit: 3, _) = error { return true }
            return false
        }
        #expect(stub.recordedRequests.count == 4)
    }
}

/// Where credentials may follow a redirect: only to the same origin (scheme, host, effective
/// port), and never from https to http unless allowed.
@Suite("Redirects and credentials: the origin matrix")
struct RedirectOriginTests {
    static let credentials: HTTPFields = [
        .authorization: "Bearer secret", .cookie: "session=1", .proxyAuthorization: "Basic cHJveHk=",
        HTTPField.Name("X-API-Key")!: "k-1", HTTPField.Name("Api-Key")!: "k-2", HTTPField.Name("X-Auth-Token")!: "t-3",
        HTTPField.Name("X-Tenant-Key")!: "marked-by-a-plugin", .accept: "*/*",
    ]

    /// A plugin that adds a key under a name of its own and marks it as a credential.
    struct TenantKeyPlugin: Plugin {
        func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
            var request = request
            request.credentialFields.insert(HTTPField.Name("X-Tenant-Key")!)
            return request
        }
    }

    /// The header fields of the second hop after `https://api.test/v1/start` redirects to `location`.
    func secondHop(to location: String) async throws -> HTTPFields {
        let stub = StubTransport()
        stub.on(.get, "/start", respond: .status(307, headers: [.location: location]))
        stub.on(.get, "/next", respond: .status(200))
        try await makeClient(stub) { $0.plugins = [TenantKeyPlugin()] }.send(Request<Void>.get("/start", headers: Self.credentials))
        let hops = stub.recordedRequests
        try #require(hops.count == 2)
        return hops[1].head.headerFields
    }

    @Test("same origin keeps every credential: relative, default port written or not, host case", arguments: [
        "/v1/next", "https://api.test/v1/next", "https://api.test:443/v1/next", "https://API.test/v1/next",
    ])
    func sameOrigin(location: String) async throws {
        let fields = try await secondHop(to: location)
        #expect(fields == Self.credentials)
    }

    @Test("another host, another port or another scheme drops every credential, the marked one too", arguments: [
        "https://elsewhere.test/next", "https://api.test:8443/next", "https://sub.api.test/next",
    ])
    func otherOrigin(location: String) async throws {
        let fields = try await secondHop(to: location)
        for name in HTTPField.Name.credentialFields.union([HTTPField.Name("X-Tenant-Key")!]) {
            #expect(fields[name] == nil, "\(name) followed the redirect to \(location)")
        }
        #expect(fields[.accept] == "*/*", "other fields stay")
    }

    @Test("https → http is refused by default, even to the same host")
    func insecureRefused() async throws {
        let stub = StubTransport()
        stub.on(.get, "/start", respond: .status(302, headers: [.location: "http://api.test/v1/next"]))
        await #expect {
            try await makeClient(stub).send(Request<Void>.get("/start", headers: Self.credentials))
        } throws: { error in
            guard case NetworkError.insecureRedirect(let from, let to) = error else { return false }
            return from.scheme == "https" && to.scheme == "http"
        }
        #expect(stub.recordedRequests.count == 1, "nothing was sent in clear text")
    }

    @Test("https → http when allowed is followed without any credential")
    func insecureAllowed() async throws {
        let stub = StubTransport()
        stub.on(.get, "/start", respond: .status(302, headers: [.location: "http://api.test/v1/next"]))
        stub.on(.get, "/next", respond: .status(200))
        try await makeClient(stub) { $0.followsInsecureRedirects = true }.send(Request<Void>.get("/start", headers: Self.credentials))
        let fields = try #require(stub.recordedRequests.last).head.headerFields
        #expect(fields[.authorization] == nil)
        #expect(fields[.cookie] == nil)
    }

    @Test("origins compare scheme, host and effective port; passwords never print")
    func origins() throws {
        #expect(Origin("https://a.test") == Origin("https://A.test:443/x"))
        #expect(Origin("http://a.test") != Origin("https://a.test"))
        #expect(Origin("http://a.test:80")?.description == "http://a.test")
        #expect(Origin("http://127.0.0.1:8080")?.isLoopback == true)
        #expect(Origin("http://[::1]:8080")?.isLoopback == true)
        #expect(Origin("http://api.test")?.isLoopback == false)
        #expect(Origin("ftp://a.test") == nil)
        let error = NetworkError.tooManyRedirects(limit: 1, lastURL: URL(string: "https://user:pw@a.test/x"))
        #expect(!error.description.contains("pw"))
    }
}
