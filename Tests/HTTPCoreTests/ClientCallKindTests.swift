import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing

protocol Animal: Sendable { var name: String { get } }
struct Dog: Decodable, Animal { var name: String; var breed: String }

struct BuildingEntity: Decodable { var id: Int; var title: String }
struct Building: Equatable { var id: Int; var name: String }
struct BuildingMapper: ModelMapper {
    func map(_ entity: BuildingEntity) throws -> Building { Building(id: entity.id, name: entity.title) }
}

@Suite struct ClientCallKindTests {
    @Test func plainCallValidatesAndDropsBody() async throws {
        let stub = StubTransport()
        stub.on(UserAPI.remove(id: 3), respond: .status(204))
        let response = try await makeClient(stub).send(UserAPI.remove(id: 3))
        #expect(response.status == .noContent)
        #expect(stub.recordedRequests.first?.head.method == .delete)
    }

    @Test func dataCallKeepsStatusHeadersAndBody() async throws {
        let stub = StubTransport()
        stub.on(.get, "/raw", respond: StubTransport.Stub(headers: [.eTag: "\"v1\""], body: Data("abc".utf8)))
        let response = try await makeClient(stub).data(Request<Data>.get("/raw"))
        #expect(response.body == Data("abc".utf8))
        #expect(response.headers[.eTag] == "\"v1\"")
        #expect(response.metrics.bytesReceived == 3)
        #expect(response.url?.absoluteString == "https://api.test/v1/raw")
    }

    @Test func modelCallDecodesAndEncodesJSONBody() async throws {
        let stub = StubTransport()
        let ada = User(id: 1, name: "Ada")
        stub.on(UserAPI.create(ada), respond: try .json(ada, status: 201))
        let created: User = try await makeClient(stub).model(UserAPI.create(ada))
        #expect(created == ada)
        let sent = try #require(stub.recordedRequests.first)
        #expect(sent.head.headerFields[.contentType] == "application/json")
        #expect(try JSONDecoder().decode(User.self, from: sent.body ?? Data()) == ada)
    }

    @Test func mappedModelCall() async throws {
        let stub = StubTransport()
        stub.on(.get, "/buildings/7", respond: .json(#"{"id":7,"title":"Tower"}"#))
        let client = makeClient(stub)
        let building = try await client.model(Request<Data>.get("/buildings/7"), mapper: BuildingMapper())
        #expect(building == Building(id: 7, name: "Tower"))
        let viaClosure = try await client.model(Request<Data>.get("/buildings/7"), entity: BuildingEntity.self) { $0.title }
        #expect(viaClosure == "Tower")
    }

    @Test func abstractionCallReturnsTheProtocol() async throws {
        let stub = StubTransport()
        stub.on(.get, "/dog", respond: .json(#"{"name":"Rex","breed":"collie"}"#))
        let animal = try await makeClient(stub).model(Request<Data>.get("/dog"), decoding: Dog.self, as: (any Animal).self)
        #expect(animal.name == "Rex")
    }

    @Test func adHocRequestWithItsOwnDecoder() async throws {
        struct Stamp: Decodable, Sendable { var at: Date }
        let stub = StubTransport()
        stub.on(.get, "/stamp", respond: .json(#"{"at":"2026-11-22T10:00:00Z"}"#))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var request = Request<Stamp>.get("/stamp")
        request.decoder = decoder
        let stamp = try await makeClient(stub).send(request).body
        #expect(stamp.at == Date(timeIntervalSince1970: 1_795_341_600))
    }

    @Test func decodingFailureNamesThePathAndKeepsTheBody() async throws {
        let stub = StubTransport()
        stub.on(.get, "/users/1", respond: .json(#"{"id":"one","name":"Ada"}"#))
        await #expect {
            _ = try await makeClient(stub).model(UserAPI.user(id: 1), as: User.self)
        } throws: { error in
            guard case NetworkError.decoding(let failure) = error else { return false }
            return failure.codingPath == ["id"] && failure.type == "User" && failure.response?.body.isEmpty == false
                && failure.response?.request.path == "/v1/users/1"
        }
    }

    @Test func downloadStreamsToFileAndUploadStreamsFromFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let payload = Data((0..<200_000).map { UInt8($0 % 251) })
        let source = directory.appendingPathComponent("in.bin")
        try payload.write(to: source)

        let stub = StubTransport()
        stub.on(.get, "/file", respond: StubTransport.Stub(body: payload))
        stub.on(.put, "/file", respond: .status(201))
        let client = makeClient(stub)

        let target = directory.appendingPathComponent("out.bin")
        let downloaded = try await client.download(Request<Data>.get("/file"), to: target)
        #expect(downloaded.body == target)
        #expect(try Data(contentsOf: target) == payload)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["in.bin", "out.bin"])

        let uploaded = try await client.upload(Request<Data>.put("/file"), fromFile: source)
        #expect(uploaded.status.code == 201)
        #expect(stub.recordedRequests.last?.body == payload)
        #expect(stub.recordedRequests.last?.head.headerFields[.contentLength] == "200000")
    }

    @Test func uploadOfAMissingFileFailsBeforeSending() async throws {
        let stub = StubTransport()
        await #expect {
            _ = try await makeClient(stub).upload(Request<Data>.put("/file"), fromFile: URL(fileURLWithPath: "/nonexistent/x.bin"))
        } throws: { error in
            guard case NetworkError.invalidRequest(.unreadableFile) = error else { return false }
            return true
        }
        #expect(stub.recordedRequests.isEmpty)
    }
}
