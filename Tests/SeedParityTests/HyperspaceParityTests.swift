import CombineAdapters
import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

// Hyperspace's examples, rewritten in Courier (Docs/Migrating-from-Hyperspace.md).

struct Post: Codable, Sendable, Equatable {
    var id: Int
    var title: String
    var body: String
    var userId: Int
}

struct NewPost: Codable, Sendable {
    var title: String
    var body: String
    var userId: Int
}

let snakeDecoder: JSONDecoder = {
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    return decoder
}()

/// Hyperspace's `Request` extension: a typed request built in one place.
extension Request where Response == Post {
    static func createPost(_ post: NewPost) -> Request<Post> {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = .sortedKeys
        var request = Request<Post>.post("/posts", body: .json(post, encoder: encoder))
        request.decoder = snakeDecoder        // a per-request decoder
        return request
    }
}

/// Hyperspace's `BackendService` over a replaceable `TransportSession`: any `Transport`.
struct PostsBackend {
    let client: APIClient

    init(baseURL: URL, transport: any Transport) {
        var configuration = ClientConfiguration(baseURL: baseURL)
        configuration.timeout = .seconds(60)       // request defaults: timeout…
        configuration.decoder = snakeDecoder       // …and decoder
        client = APIClient(configuration: configuration, transport: transport)
    }

    func create(_ post: NewPost) async throws(NetworkError) -> Post {
        try await client.send(.createPost(post)).body
    }

    func delete(id: Int) async throws(NetworkError) {
        try await client.send(Request<Void>.delete("/posts/\(id)"))
    }
}

@Suite("Hyperspace's examples on Courier")
struct HyperspaceParityTests {
    @Test("the createPost request extension decodes the created post")
    func createPost() async throws {
        let server = try await exampleServer()
        let backend = PostsBackend(baseURL: server.baseURL, transport: transport)
        let post = try await backend.create(NewPost(title: "Hello", body: "First post", userId: 1))
        #expect(post == Post(id: 101, title: "Hello", body: "First post", userId: 1))
        #expect(server.requests.last?.bodyCRC32 == crc(Data(#"{"body":"First post","title":"Hello","user_id":1}"#.utf8)))
        await server.shutdown()
    }

    @Test("request defaults: the client's decoder and timeout, overridden per request")
    func defaults() async throws {
        let server = try await exampleServer()
        let backend = PostsBackend(baseURL: server.baseURL, transport: transport)
        let viaDefault = try await backend.client.model(Request<Post>.get("/posts"), as: Post.self)   // the default decoder
        #expect(viaDefault.userId == 1)
        var slow = Request<Data>.get("/delay/120000")
        slow.timeout = .milliseconds(200)
        do {
            _ = try await backend.client.send(slow)
            Issue.record("expected a timeout")
        } catch {
            guard case .transport(let failure) = error else { Issue.record("\(error)"); return }
            #expect(failure.kind == .timedOut)
        }
        await server.shutdown()
    }

    @Test("a DELETE with no result")
    func deleteWithoutResult() async throws {
        let server = try await exampleServer()
        let backend = PostsBackend(baseURL: server.baseURL, transport: transport)
        try await backend.delete(id: 1)
        #expect(server.requests.last?.method == "DELETE")
        #expect(server.requests.last?.path == "/posts/1")
        await server.shutdown()
    }

    @Test("a replaceable transport session: the same backend over a stub and over the network")
    func replaceableTransport() async throws {
        let stub = StubTransport()
        stub.on(.post, "/posts", respond: .json(#"{"id":7,"title":"Stubbed","body":"b","user_id":2}"#, status: 201))
        let offline = PostsBackend(baseURL: URL(string: "https://api.example.invalid")!, transport: stub)
        #expect(try await offline.create(NewPost(title: "Stubbed", body: "b", userId: 2)).id == 7)
        #expect(stub.recordedRequests.count == 1)

        let server = try await exampleServer()
        let online = PostsBackend(baseURL: server.baseURL, transport: transport)
        #expect(try await online.create(NewPost(title: "Hello", body: "First post", userId: 1)).id == 101)
        await server.shutdown()
    }

    @Test("completion handlers deliver on the queue the caller names")
    func completionHandlers() async throws {
        let server = try await exampleServer()
        let backend = PostsBackend(baseURL: server.baseURL, transport: transport)
        let queue = DispatchQueue(label: "parity.callbacks")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "parity.callbacks")
        let (post, onQueue) = await withCheckedContinuation { continuation in
            backend.client.send(.createPost(NewPost(title: "Hello", body: "First post", userId: 1)), on: queue) { result in
                continuation.resume(returning: ((try? result.get())?.body, DispatchQueue.getSpecific(key: key) == "parity.callbacks"))
            }
        }
        #expect(post?.id == 101)
        #expect(onQueue)
        let failure = await withCheckedContinuation { continuation in
            backend.client.send(Request<Void>.delete("/status/404"), on: queue) { result in
                if case .failure(let error) = result { continuation.resume(returning: error.status?.code) } else { continuation.resume(returning: nil) }
            }
        }
        #expect(failure == 404)
        await server.shutdown()
    }
}
