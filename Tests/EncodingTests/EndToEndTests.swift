import CourierTesting
import Encoding
import Foundation
import HTTPCore
import HTTPTypes
import Testing

/// A domain model that is not `Encodable`.
final class Building: Sendable {
    let id: Int
    let name: String
    init(id: Int, name: String) { self.id = id; self.name = name }
}

struct BuildingEntity: Codable, Sendable, Equatable {
    var id: Int
    var title: String
}

struct BuildingMapper: EntityMapper {
    func entity(from building: Building) throws -> BuildingEntity {
        BuildingEntity(id: building.id, title: building.name)
    }
}

struct RejectingMapper: EntityMapper {
    struct Rejected: Error {}
    func entity(from building: Building) throws -> BuildingEntity { throw Rejected() }
}

enum CatalogAPI: Endpoint {
    case search(Search)
    case create(name: String, tags: [String])
    case login(user: String, password: String)
    case save(Building)
    case broken

    var path: String {
        switch self {
        case .search: "/search"
        case .create, .save: "/buildings"
        case .login: "/login"
        case .broken: "/broken"
        }
    }

    var method: HTTPRequest.Method {
        switch self {
        case .search: .get
        case .create, .login, .save, .broken: .post
        }
    }

    var body: RequestContent {
        switch self {
        case .search(let search):
            .query(search)
        case .create(let name, let tags):
            .combined([
                .parameters(["dryRun": true, "v": 2], encoding: URLEncoding.queryString),
                .parameters(["name": name, "tags": tags], encoding: JSONEncoding.default),
            ])
        case .login(let user, let password):
            .parameters(["user": user, "password": password], encoding: URLEncoding.default)
        case .save(let building):
            .json(building, mapper: BuildingMapper())
        case .broken:
            .parameters(["user": ["scores": [1, 2, Double.nan]]], encoding: JSONEncoding.default)
        }
    }
}

@Suite struct EndToEndTests {
    let stub = StubTransport(fallback: .json("{}"))
    var client: APIClient { APIClient(baseURL: URL(string: "https://api.test/v1")!, transport: stub) }

    @Test func queryFromEncodableReachesTheWire() async throws {
        let search = Search(q: "é & 😀", page: 2, tags: ["x"], archived: true, filter: nil)
        try await client.send(CatalogAPI.search(search))
        let request = try #require(stub.recordedRequests.first)
        #expect(request.head.path == "/v1/search?archived=1&page=2&q=%C3%A9%20%26%20%F0%9F%98%80&tags%5B%5D=x")
        #expect(request.body == nil || request.body?.isEmpty == true)
    }

    @Test func queryPlusJSONBody() async throws {
        try await client.send(CatalogAPI.create(name: "Tower", tags: ["tall"]))
        let request = try #require(stub.recordedRequests.first)
        #expect(request.head.path == "/v1/buildings?dryRun=1&v=2")
        #expect(request.head.headerFields[.contentType] == "application/json")
        #expect(request.body.map { String(decoding: $0, as: UTF8.self) } == #"{"name":"Tower","tags":["tall"]}"#)
    }

    @Test func formBodyForPost() async throws {
        try await client.send(CatalogAPI.login(user: "ada", password: "p&ss=+/"))
        let request = try #require(stub.recordedRequests.first)
        #expect(request.head.path == "/v1/login")
        #expect(request.head.headerFields[.contentType] == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(request.body.map { String(decoding: $0, as: UTF8.self) } == "password=p%26ss%3D%2B%2F&user=ada")
        #expect(request.head.headerFields[.contentLength] == request.body.map { String($0.count) })
    }

    @Test func domainModelThroughMapper() async throws {
        try await client.send(CatalogAPI.save(Building(id: 9, name: "Hall")))
        let body = try #require(stub.recordedRequests.first?.body)
        #expect(try JSONDecoder().decode(BuildingEntity.self, from: body) == BuildingEntity(id: 9, title: "Hall"))
        #expect(stub.recordedRequests.first?.head.headerFields[.contentType] == "application/json")
    }

    @Test func mapperFailureIsAnEncodingError() throws {
        let failure = encodingFailure { _ = try applied(.json(Building(id: 1, name: "x"), mapper: RejectingMapper()), method: .post) }
        #expect(failure?.message.contains("mapping Building to BuildingEntity failed") == true)
    }

    @Test func entityBodyWithConfiguredEncoder() throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        struct NewPost: Encodable, Sendable { var postTitle: String }
        let draft = try applied(.json(NewPost(postTitle: "Hi"), encoder: encoder), method: .post)
        #expect(bodyText(of: draft) == #"{"post_title":"Hi"}"#)
    }

    @Test func badValueFailsTheCallBeforeAnythingIsSent() async {
        do {
            try await client.send(CatalogAPI.broken)
            Issue.record("the call should have failed")
        } catch {
            guard case .encoding(let failure) = error else {
                Issue.record("expected an encoding error, got \(error)")
                return
            }
            #expect(failure.keyPath == ["user", "scores", "2"])
        }
        #expect(stub.recordedRequests.isEmpty)
    }
}
