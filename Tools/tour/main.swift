// The tour: starts an embedded loopback server (CourierTesting's LoopbackServer answering
// from a StubTransport's routes) and makes one call of every kind through APIClient and the
// AsyncHTTPClient transport. `swift run tour`.
import AsyncHTTPClientTransport
import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes

struct User: Codable, Sendable { var id: Int; var name: String }
struct BuildingEntity: Decodable { var id: Int; var title: String }
struct Building { var id: Int; var name: String }
struct BuildingMapper: ModelMapper {
    func map(_ entity: BuildingEntity) throws -> Building { Building(id: entity.id, name: entity.title) }
}
protocol Animal: Sendable { var name: String { get } }
struct Dog: Decodable, Animal { var name: String; var breed: String }
/// What the server says it received.
struct Receipt: Codable { var bytes: Int }

/// The tour's API, as an enum.
enum TourAPI: Endpoint {
    case user(id: Int)
    case building(id: Int)
    case randomDog
    case createUser(User)

    var path: String {
        switch self {
        case .user(let id): "/users/\(id)"
        case .building(let id): "/buildings/\(id)"
        case .randomDog: "/dogs/random"
        case .createUser: "/users"
        }
    }
    var method: HTTPRequest.Method {
        if case .createUser = self { return .post }
        return .get
    }
    var body: RequestContent {
        if case .createUser(let user) = self { return .json(user) }
        return .none
    }
}

func step(_ title: String, _ body: () async throws -> String) async -> Bool {
    do {
        print("✔ \(title): \(try await body())")
        return true
    } catch {
        print("✘ \(title): \(error)")
        return false
    }
}

/// The server's routes: canned answers, and receipts for what was uploaded.
let routes = StubTransport()
let receipt: @Sendable (StubTransport.RecordedRequest) -> StubTransport.Stub = { request in
    (try? .json(Receipt(bytes: request.body?.count ?? 0))) ?? .status(500)
}
routes.on(.get, "/no-content", respond: .status(204))
routes.on(.get, "/bytes/1024", respond: StubTransport.Stub(body: Data(count: 1024)))
routes.on(.get, "/bytes/1048576", respond: StubTransport.Stub(body: Data(count: 1_048_576)))
routes.on(.get, "/users/42", respond: .json(#"{"id":42,"name":"Ada"}"#))
routes.on(.post, "/users", responder: receipt)
routes.on(.put, "/upload", responder: receipt)
routes.on(.get, "/buildings/7", respond: .json(#"{"id":7,"title":"Tower"}"#))
routes.on(.get, "/dogs/random", respond: .json(#"{"name":"Rex","breed":"collie"}"#))
for hop in 1...3 {
    routes.on(.get, "/redirect/\(hop)", respond: .status(302, headers: [.location: hop > 1 ? "/redirect/\(hop - 1)" : "/landing"]))
}
routes.on(.get, "/landing", respond: .status(200))
let server = try await LoopbackServer.start(answering: routes)

let transport = AsyncHTTPClientTransport()
var configuration = ClientConfiguration(baseURL: server.baseURL)
configuration.retryPolicy = .exponential(maxAttempts: 3)
let client = APIClient(configuration: configuration, transport: transport)
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("courier-tour-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
print("Courier tour against \(server.baseURL.absoluteString)\n")

var results: [Bool] = []
results.append(await step("plain call") { "status \(try await client.send(Request<Void>.get("/no-content")).status.code)" })
results.append(await step("data call") {
    let response = try await client.data(Request<Data>.get("/bytes/1024"))
    return "\(response.body.count) bytes, \(response.metrics.duration)"
})
results.append(await step("model call") { "\(try await client.model(TourAPI.user(id: 42), as: User.self))" })
results.append(await step("JSON body") {
    let receipt = try await client.response(TourAPI.createUser(User(id: 1, name: "Grace")), as: Receipt.self).body
    return "server received \(receipt.bytes) bytes"
})
results.append(await step("mapped model") { "\(try await client.model(TourAPI.building(id: 7), mapper: BuildingMapper()))" })
results.append(await step("abstraction") {
    let animal = try await client.model(TourAPI.randomDog, decoding: Dog.self, as: (any Animal).self)
    return "an Animal named \(animal.name)"
})
results.append(await step("download to a file") {
    let target = scratch.appendingPathComponent("download.bin")
    let response = try await client.download(Request<Data>.get("/bytes/1048576"), to: target)
    return "\(response.metrics.bytesReceived) bytes to \(target.lastPathComponent)"
})
results.append(await step("upload from a file") {
    let source = scratch.appendingPathComponent("download.bin")
    let receipt = try JSONDecoder().decode(Receipt.self, from: try await client.upload(Request<Data>.put("/upload"), fromFile: source).body)
    return "server received \(receipt.bytes) bytes"
})
results.append(await step("redirects followed") {
    let response = try await client.send(Request<Void>.get("/redirect/3"))
    return "\(response.metrics.redirects) hops to \(response.request.path ?? "")"
})
results.append(await step("errors you can switch on") {
    do {
        try await client.send(Request<Void>.get("/status/404"))
        return "no error?"
    } catch NetworkError.notFound(let response) {
        return "notFound (\(response.status.code))"
    }
})

try? FileManager.default.removeItem(at: scratch)
try await transport.shutdown()
await server.shutdown()
let passed = results.filter { $0 }.count
print("\n\(passed) of \(results.count) calls succeeded")
exit(passed == results.count ? 0 : 1)
