import Encoding
import Foundation
import HTTPCore
import HTTPTypes
import Logging
import Plugins
import Testing
import TestSupport

// Leash's examples, rewritten in Courier (Docs/Migrating-from-Leash.md).

/// Leash's `QueryEncodable`: an `Encodable` value as query items.
struct SearchQuery: Encodable, Sendable {
    var term: String
    var page: Int
    var tags: [String]
}

struct Profile: Codable, Sendable, Equatable {
    var name: String
    var age: Int
}

/// Leash's four interceptor moments (execution, failure, success, completion) with one shape.
struct MomentsInterceptor: Interceptor {
    let moments: LockedBox<[String]>
    func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        moments.withLock { $0.append("execution") }
        defer { moments.withLock { $0.append("completion") } }
        do {
            let response = try await next(request)
            moments.withLock { $0.append("success \(response.head.status.code)") }
            return response
        } catch {
            moments.withLock { $0.append("failure") }
            throw error
        }
    }
}

/// Leash's body validator: refuses to send a POST without a JSON object body (completes early).
struct BodyValidator: Interceptor {
    struct Invalid: Error, Equatable {}
    func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        if request.head.method == .post {
            guard case .data(let data)? = request.body?.source, data.first == UInt8(ascii: "{") else { throw Invalid() }
        }
        return try await next(request)
    }
}

/// Leash's response validator: a response without the API's signature header is an error.
struct ResponseValidator: Interceptor {
    struct Unsigned: Error, Equatable {}
    func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        let response = try await next(request)
        guard response.head.headerFields[HTTPField.Name("X-Signature")!] != nil else { throw Unsigned() }
        return response
    }
}

@Suite("Leash's examples on Courier")
struct LeashParityTests {
    @Test("a manager built from scheme, host, port and path; a client that executes endpoints")
    func manager() async throws {
        let server = try await exampleServer()
        server.script("/api/v1/profiles/me", headers: [HeaderField(name: "Content-Type", value: "application/json")], body: Data(#"{"name":"Ada","age":36}"#.utf8))
        let configuration = try ClientConfiguration(scheme: "http", host: "127.0.0.1", port: server.port, path: "/api/v1")
        let client = APIClient(configuration: configuration, transport: transport)
        #expect(try await client.model(Request<Profile>.get("/profiles/me"), as: Profile.self) == Profile(name: "Ada", age: 36))
        #expect(throws: NetworkError.self) { _ = try ClientConfiguration(scheme: "http", host: "", path: "/x") }
        await server.shutdown()
    }

    @Test("the four parameter forms: QueryEncodable, [String: CustomStringConvertible], Encodable body, [String: Any] body")
    func parameterForms() async throws {
        let server = try await exampleServer()
        let client = APIClient(baseURL: server.baseURL, transport: transport)

        try await client.send(Request<Void>(method: .get, path: "/echo", body: .query(SearchQuery(term: "swift nio", page: 2, tags: ["a", "b"]))))
        let encodable = try #require(server.requests.last)
        #expect(encodable.queryValue("term") == "swift nio")
        #expect(encodable.queryValue("page") == "2")
        #expect(encodable.query.filter { $0.name == "tags[]" }.map(\.value) == ["a", "b"])

        try await client.send(Request<Void>(method: .get, path: "/echo", body: .query(["page": 3, "sort": "name", "desc": true])))
        let dictionary = try #require(server.requests.last)
        #expect(dictionary.queryValue("page") == "3")
        #expect(dictionary.queryValue("sort") == "name")

        try await client.send(Request<Void>.post("/echo", body: .json(Profile(name: "Ada", age: 36), encoder: sortedEncoder)))
        #expect(server.requests.last?.bodyCRC32 == crc(try sortedJSON(Profile(name: "Ada", age: 36))))

        try await client.send(Request<Void>.post("/echo", body: .jsonObject(["name": "Ada", "languages": ["en", "fr"], "age": 36], encoding: JSONEncoding(options: .sortedKeys))))
        #expect(server.requests.last?.bodyCRC32 == crc(Data(#"{"age":36,"languages":["en","fr"],"name":"Ada"}"#.utf8)))
        await server.shutdown()
    }

    @Test("an authenticator adds the header; the token-refresh interceptor refreshes once on 401 and retries")
    func authenticatorAndRefresh() async throws {
        let server = try await exampleServer()
        server.route("/secure") { request, writer in
            if request.values(of: "Authorization") == ["Bearer fresh"] {
                try await writer.respondJSON(Profile(name: "Ada", age: 36))
            } else {
                try await writer.respond(status: 401)
            }
        }
        let refreshes = LockedBox(0)
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.interceptors = [AuthenticationInterceptor(
            authenticator: BearerAuthenticator { stale in
                refreshes.withLock { $0 += 1 }
                #expect(stale.accessToken == "stale")
                return BearerCredential(accessToken: "fresh")
            },
            credential: BearerCredential(accessToken: "stale", refreshToken: "r1")
        )]
        let client = APIClient(configuration: configuration, transport: transport)
        #expect(try await client.model(Request<Profile>.get("/secure"), as: Profile.self).name == "Ada")
        #expect(try await client.model(Request<Profile>.get("/secure"), as: Profile.self).name == "Ada")
        #expect(refreshes.current == 1)
        #expect(server.requests.map { $0.values(of: "Authorization").first ?? "" } == ["Bearer stale", "Bearer fresh", "Bearer fresh"])
        await server.shutdown()
    }

    @Test("interceptors at four moments, a logger, and one that completes early")
    func moments() async throws {
        let server = try await exampleServer()
        let moments = LockedBox<[String]>([])
        let lines = LockedBox<[String]>([])
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.plugins = [LoggingPlugin(logger: capturingLogger(lines))]
        configuration.interceptors = [MomentsInterceptor(moments: moments)]
        let client = APIClient(configuration: configuration, transport: transport)
        _ = try await client.model(DogRequest.random, as: Dog.self)
        let closed = APIClient(configuration: { var c = configuration; c.baseURL = URL(string: "http://127.0.0.1:1")!; return c }(), transport: transport)
        await #expect(throws: NetworkError.self) { try await closed.send(DogRequest.random) }
        #expect(moments.current == ["execution", "success 200", "completion", "execution", "failure", "completion"])
        #expect(lines.current.contains { $0.contains("/dogs/random") })
        await server.shutdown()
    }

    @Test("the cache interceptor answers a fresh response from memory")
    func cache() async throws {
        let server = try await exampleServer()
        server.script("/cached", headers: [HeaderField(name: "Cache-Control", value: "max-age=60"), HeaderField(name: "Content-Type", value: "application/json")], body: Data(#"{"name":"Ada","age":36}"#.utf8))
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.interceptors = [CacheInterceptor()]
        let client = APIClient(configuration: configuration, transport: transport)
        for _ in 0..<3 { #expect(try await client.model(Request<Profile>.get("/cached"), as: Profile.self).age == 36) }
        #expect(server.requests.count == 1)
        await server.shutdown()
    }

    @Test("body and response validators")
    func validators() async throws {
        let server = try await exampleServer()
        server.script("/signed", headers: [HeaderField(name: "X-Signature", value: "ok")])
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.interceptors = [BodyValidator(), ResponseValidator()]
        let client = APIClient(configuration: configuration, transport: transport)
        try await client.send(Request<Void>.post("/signed", body: .json(Profile(name: "Ada", age: 1))))
        await #expect(throws: NetworkError.self) { try await client.send(Request<Void>.post("/signed", body: .text("not json"))) }
        #expect(server.requests.count == 1, "the invalid body never left")
        do {
            try await client.send(Request<Void>.get("/echo"))
            Issue.record("expected the response validator to refuse")
        } catch {
            guard case .underlying(let underlying) = error else { Issue.record("\(error)"); return }
            #expect(underlying as? ResponseValidator.Unsigned != nil)
        }
        await server.shutdown()
    }
}
