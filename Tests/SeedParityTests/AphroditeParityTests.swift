import Encoding
import ErrorMapping
import Foundation
import HTTPCore
import HTTPTypes
import Logging
import Plugins
import Testing
import TestSupport

// Aphrodite's README examples, rewritten in Courier (Docs/Migrating-from-Aphrodite.md).

struct User: Codable, Sendable, Equatable {
    var id: Int
    var name: String
    var email: String
}

struct Agreement: Encodable, Sendable {
    var version: String
    var accepted: Bool
}

/// Aphrodite's `NetworkTarget`: base URL, scope, timeout, path, method, request type, headers.
enum UserManagement: Endpoint {
    case fetchUser(id: Int)
    case avatar(userID: Int)
    case acceptAgreement(Agreement)

    var path: String {
        switch self {
        case .fetchUser(let id): "/users/\(id)"
        case .avatar(let id): "/users/\(id)/avatar"
        case .acceptAgreement: "/agreements/accept"
        }
    }
    var method: HTTPRequest.Method {
        if case .acceptAgreement = self { return .post }
        return .get
    }
    var body: RequestContent {
        if case .acceptAgreement(let agreement) = self { return .json(agreement, encoder: sortedEncoder) }
        return .none
    }
    var headers: HTTPFields { [.accept: "application/json"] }
    var timeout: Duration? { .seconds(60) }          // requestTimeoutInterval
    var scopes: Set<PluginScope> { ["user-management"] }
}

/// The entity the API sends, and the model the app uses.
struct BuildingEntity: Codable, Sendable {
    var building_id: Int
    var title: String
    var floors: Int
}

struct Building: Equatable, Sendable {
    var id: Int
    var name: String
    var floors: Int
}

/// Aphrodite's mapper: entity in, model out.
struct BuildingMapper: ModelMapper {
    func map(_ entity: BuildingEntity) throws -> Building {
        Building(id: entity.building_id, name: entity.title, floors: entity.floors)
    }
}

/// The reverse, for "data from a model plus mapper" bodies.
struct BuildingEntityMapper: EntityMapper {
    func entity(from building: Building) throws -> BuildingEntity {
        BuildingEntity(building_id: building.id, title: building.name, floors: building.floors)
    }
}

/// Aphrodite's request types: plain, upload data, parameters with an encoding, data from an
/// entity, data from a model plus mapper.
enum Bodies: Endpoint {
    case plain
    case upload(Data)
    case parameters([String: any Sendable])
    case entity(BuildingEntity)
    case model(Building)

    var path: String { "/echo" }
    var method: HTTPRequest.Method {
        if case .plain = self { return .get }
        return .post
    }
    var body: RequestContent {
        switch self {
        case .plain: .none
        case .upload(let data): .data(data, contentType: "application/octet-stream")
        case .parameters(let parameters): .parameters(parameters, encoding: JSONEncoding(options: .sortedKeys))
        case .entity(let entity): .json(entity, encoder: sortedEncoder)
        case .model(let building): .json(building, mapper: BuildingEntityMapper(), encoder: sortedEncoder)
        }
    }
}

let sortedEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return encoder
}()

/// Aphrodite's domain error factory, with AphroditeError's cases.
enum UserError: Error, Equatable {
    case unauthorized, forbidden, notFound, client(Int), server(Int), decoding, encoding
    case notConnectedToInternet, serviceCancelled, unexpected
}

struct UserErrors: DomainErrorFactory {
    func make(from error: NetworkError, body: ProblemDetails?) -> UserError {
        switch FailureCategory(error) {
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .client(let status): .client(status)
        case .server(let status): .server(status)
        case .decoding: .decoding
        case .encoding: .encoding
        case .offline, .transport(.notConnected), .transport(.cannotConnect), .transport(.dns): .notConnectedToInternet
        case .cancelled: .serviceCancelled
        default: .unexpected
        }
    }
}

/// Aphrodite's custom `ParameterEncoding`: parameters as `key=value` lines of plain text.
struct PlainTextEncoding: ParameterEncoding {
    func encode(_ parameters: [String: Any]) throws(NetworkError) -> RequestContent {
        .text(parameters.keys.sorted().map { "\($0)=\(parameters[$0]!)" }.joined(separator: "\n"))
    }
}

@Suite("Aphrodite's examples on Courier")
struct AphroditeParityTests {
    @Test("URL encoding in the query or the body, and a custom parameter encoding")
    func parameterEncodings() async throws {
        let server = try await exampleServer()
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        try await client.send(Request<Void>(method: .get, path: "/echo", body: .parameters(["q": "swift nio", "page": 2], encoding: URLEncoding())))
        #expect(server.requests.last?.queryValue("q") == "swift nio")
        #expect(server.requests.last?.queryValue("page") == "2")
        try await client.send(Request<Void>(method: .post, path: "/echo", body: .parameters(["q": "a&b"], encoding: URLEncoding())))
        #expect(server.requests.last?.values(of: "Content-Type").first?.hasPrefix("application/x-www-form-urlencoded") == true)
        #expect(server.requests.last?.bodyCRC32 == crc(Data("q=a%26b".utf8)))
        try await client.send(Request<Void>(method: .post, path: "/echo", body: .parameters(["b": 2, "a": "x"], encoding: PlainTextEncoding())))
        #expect(server.requests.last?.bodyCRC32 == crc(Data("a=x\nb=2".utf8)))
        await server.shutdown()
    }

    @Test("the UserManagement target as plain, data, model and mapped-model calls")
    func callKinds() async throws {
        let server = try await exampleServer()
        let client = APIClient(baseURL: server.baseURL, transport: transport)

        let accepted = try await client.send(UserManagement.acceptAgreement(Agreement(version: "2026-01", accepted: true)))   // plain
        #expect(accepted.status == .noContent)
        let seen = try #require(server.requests.last)
        #expect(seen.method == "POST")
        #expect(seen.bodyCRC32 == crc(try sortedJSON(Agreement(version: "2026-01", accepted: true))))

        let avatar = try await client.data(UserManagement.avatar(userID: 42))                                              // data
        #expect(avatar.body == avatarBytes)
        #expect(avatar.headers[.contentType] == "image/png")

        let user = try await client.model(UserManagement.fetchUser(id: 42), as: User.self)                                  // model
        #expect(user == User(id: 42, name: "Ada Lovelace", email: "ada@example.com"))

        let building = try await client.model(Request<Data>.get("/buildings/7"), mapper: BuildingMapper())                  // mapped model
        #expect(building == Building(id: 7, name: "Tower of London", floors: 5))
        await server.shutdown()
    }

    @Test("request bodies: plain, upload data, parameters with JSON encoding, data from an entity, data from a model plus mapper")
    func requestBodies() async throws {
        let server = try await exampleServer()
        let client = APIClient(baseURL: server.baseURL, transport: transport)

        try await client.send(Bodies.plain)
        #expect(server.requests.last?.bodySize == 0)

        let bytes = Data((0..<5000).map { UInt8($0 % 199) })
        try await client.send(Bodies.upload(bytes))
        #expect(server.requests.last?.bodyCRC32 == crc(bytes))
        #expect(server.requests.last?.values(of: "Content-Type") == ["application/octet-stream"])

        try await client.send(Bodies.parameters(["name": "Ada", "age": 36]))
        #expect(server.requests.last?.bodyCRC32 == crc(Data(#"{"age":36,"name":"Ada"}"#.utf8)))
        #expect(server.requests.last?.values(of: "Content-Type") == ["application/json"])

        let entity = BuildingEntity(building_id: 9, title: "Shard", floors: 95)
        try await client.send(Bodies.entity(entity))
        #expect(server.requests.last?.bodyCRC32 == crc(try sortedJSON(entity)))

        try await client.send(Bodies.model(Building(id: 9, name: "Shard", floors: 95)))
        #expect(server.requests.last?.bodyCRC32 == crc(try sortedJSON(entity)), "the mapper turned the model into the same entity")
        await server.shutdown()
    }

    @Test("a domain error factory: the caller catches its own error type")
    func domainErrors() async throws {
        let server = try await exampleServer()
        let users = DomainClient(client: APIClient(baseURL: server.baseURL, transport: transport), factory: UserErrors())
        do {
            _ = try await users.model(UserManagement.fetchUser(id: 404), as: User.self)
            Issue.record("expected notFound")
        } catch {
            #expect(error == .notFound)
        }
        let closed = DomainClient(client: APIClient(baseURL: URL(string: "http://127.0.0.1:1")!, transport: transport), factory: UserErrors())
        await #expect(throws: UserError.notConnectedToInternet) { try await closed.send(UserManagement.fetchUser(id: 1)) }
        await server.shutdown()
    }

    @Test("a plugin with a target scope runs for that target only, at prepare, willSend and didReceive")
    func scopedPlugin() async throws {
        struct UserManagementPlugin: Plugin {
            let seen: LockedBox<[String]>
            var scope: PluginScope { "user-management" }
            func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
                var request = request
                request.headers[HTTPField.Name("X-Tenant")!] = "acme"
                seen.withLock { $0.append("prepare \(context.endpointName)") }
                return request
            }
            func willSend(_ request: PreparedRequest, context: CallContext) async {
                seen.withLock { $0.append("willSend") }
            }
            func didReceive(_ result: Result<Response<Data>, NetworkError>, for request: PreparedRequest, context: CallContext) async {
                seen.withLock { $0.append("didReceive \((try? result.get().status.code) ?? 0)") }
            }
        }
        let server = try await exampleServer()
        let seen = LockedBox<[String]>([])
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.plugins = [UserManagementPlugin(seen: seen)]
        let client = APIClient(configuration: configuration, transport: transport)
        _ = try await client.model(UserManagement.fetchUser(id: 42), as: User.self)
        #expect(server.requests.last?.values(of: "X-Tenant") == ["acme"])
        _ = try await client.data(Request<Data>.get("/dogs/random"))
        #expect(server.requests.last?.values(of: "X-Tenant").isEmpty == true, "another target is out of scope")
        #expect(seen.current == ["prepare GET /users/42", "willSend", "didReceive 200"])
        await server.shutdown()
    }

    @Test("the logger plugin logs each call, with secrets redacted")
    func loggerPlugin() async throws {
        let server = try await exampleServer()
        let lines = LockedBox<[String]>([])
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.plugins = [LoggingPlugin(logger: capturingLogger(lines), responseLevel: .info)]
        let client = APIClient(configuration: configuration, transport: transport)
        _ = try await client.model(Request<User>(method: .get, path: "/users/42", headers: [.authorization: "Bearer top-secret"]), as: User.self)
        let logged = lines.current.joined(separator: "\n")
        #expect(logged.contains("/users/42"))
        #expect(logged.contains("200"))
        #expect(!logged.contains("top-secret"))
        await server.shutdown()
    }
}
