#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import CombineAdapters
import Encoding
import ErrorMapping
import Foundation
import HTTPCore
import HTTPTypes
import Multipart
import Plugins
import Reachability
import Testing
import TestSupport

// Combine Networking's examples, rewritten in Courier (Docs/Migrating-from-CombineNetworking.md).

protocol Animal: Sendable {
    var name: String { get }
}

struct Dog: Codable, Sendable, Equatable, Animal {
    var name: String
    var breed: String
}

struct Human: Codable, Sendable, Equatable {
    var name: String
    var age: Int
}

/// Combine Networking's request builders as enums: path, query, body, method, base URL
/// override, header fields, multipart body.
enum DogRequest: Endpoint {
    case random
    case search(breed: String, limit: Int)
    case create(Dog)
    case uploadImage(Data, fileName: String)
    case mirror   // another host: a base URL override

    var baseURL: URL? {
        if case .mirror = self { return URL(string: "http://127.0.0.1:\(DogRequest.mirrorPort.current)") }
        return nil
    }
    static let mirrorPort = LockedBox(0)

    var path: String {
        switch self {
        case .random, .mirror: "/dogs/random"
        case .search: "/echo/dogs"
        case .create: "/echo/dogs/new"
        case .uploadImage: "/upload/dogs/image"
        }
    }
    var method: HTTPRequest.Method {
        switch self {
        case .random, .search, .mirror: .get
        case .create, .uploadImage: .post
        }
    }
    var query: [URLQueryItem] {
        guard case .search(let breed, let limit) = self else { return [] }
        return [URLQueryItem(name: "breed", value: breed), URLQueryItem(name: "limit", value: String(limit))]
    }
    var headers: HTTPFields { [HTTPField.Name("X-Client")!: "combine-networking-port"] }
    var body: RequestContent {
        switch self {
        case .create(let dog): .json(dog, encoder: sortedEncoder)
        case .uploadImage(let data, let fileName):
            .multipart({
                var form = MultipartForm()
                form.append(data: data, name: "image", fileName: fileName, contentType: "image/png")   // name, fileName, mimeType, data
                form.append("a good dog", name: "caption")
                return form
            }())
        default: .none
        }
    }
}

enum HumanRequest: Endpoint {
    case greet(Human)
    var path: String { "/echo/humans" }
    var method: HTTPRequest.Method { .put }
    var body: RequestContent {
        guard case .greet(let human) = self else { return .none }
        return .json(human, encoder: sortedEncoder)
    }
}

/// Combine Networking's custom error type.
enum DogError: Error, Equatable {
    case noSuchDog
    case offline
}

/// Waits for a publisher's single value (or its failure).
func value<Output: Sendable>(of publisher: AnyPublisher<Output, NetworkError>) async throws(NetworkError) -> Output {
    let result: Result<Output, NetworkError> = await withCheckedContinuation { continuation in
        let box = LockedBox<AnyCancellable?>(nil)
        let resumed = LockedBox(false)
        /// Whether this is the first result (a value, or a failure without a value).
        let first = { @Sendable () -> Bool in
            resumed.withLock { done in
                defer { done = true }
                return !done
            }
        }
        let cancellable = publisher.sink(
            receiveCompletion: { completion in
                if case .failure(let error) = completion, first() {
                    continuation.resume(returning: .failure(error))
                }
                _ = box.current
            },
            receiveValue: { value in
                if first() { continuation.resume(returning: .success(value)) }
            }
        )
        box.withLock { $0 = cancellable }
    }
    return try result.get()
}

/// Waits for a publisher that completes without a value.
func completion(of publisher: AnyPublisher<Never, NetworkError>) async -> Subscribers.Completion<NetworkError> {
    await withCheckedContinuation { continuation in
        let box = LockedBox<AnyCancellable?>(nil)
        let cancellable = publisher.sink(receiveCompletion: { continuation.resume(returning: $0); _ = box.current }, receiveValue: { _ in })
        box.withLock { $0 = cancellable }
    }
}

@Suite("Combine Networking's examples on Courier")
struct CombineNetworkingParityTests {
    @Test("the Dog and Human request builders: query, JSON body, multipart image, base URL override, headers")
    func requestBuilders() async throws {
        let server = try await exampleServer()
        let mirror = try await exampleServer()
        DogRequest.mirrorPort.withLock { $0 = mirror.port }
        let client = APIClient(baseURL: server.baseURL, transport: transport)

        try await client.send(DogRequest.search(breed: "collie", limit: 3))
        let search = try #require(server.requests.last)
        #expect(search.queryValue("breed") == "collie")
        #expect(search.queryValue("limit") == "3")
        #expect(search.values(of: "X-Client") == ["combine-networking-port"])

        try await client.send(DogRequest.create(Dog(name: "Rex", breed: "collie")))
        #expect(server.requests.last?.bodyCRC32 == crc(try sortedJSON(Dog(name: "Rex", breed: "collie"))))

        try await client.send(HumanRequest.greet(Human(name: "Tim", age: 7)))
        #expect(server.requests.last?.method == "PUT")
        #expect(server.requests.last?.bodyCRC32 == crc(try sortedJSON(Human(name: "Tim", age: 7))))

        try await client.send(DogRequest.uploadImage(avatarBytes, fileName: "rex.png"))
        let upload = try #require(server.requests.last)
        #expect(upload.values(of: "Content-Type").first?.hasPrefix("multipart/form-data; boundary=") == true)
        #expect(upload.bodySize > avatarBytes.count)

        _ = try await client.model(DogRequest.mirror, as: Dog.self)
        #expect(mirror.requests.count == 1, "the base URL override went to the other host")
        await mirror.shutdown()
        await server.shutdown()
    }

    @Test("an API-key plugin modifies every request")
    func apiKeyPlugin() async throws {
        let server = try await exampleServer()
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.plugins = [APIKeyPlugin(key: "dog-api-key", location: .header(HTTPField.Name("X-Api-Key")!))]
        let client = APIClient(configuration: configuration, transport: transport)
        _ = try await client.model(DogRequest.random, as: Dog.self)
        #expect(server.requests.last?.values(of: "X-Api-Key") == ["dog-api-key"])
        await server.shutdown()
    }

    @Test("a custom error type and an error handler that retries once and converts errors")
    func errorHandler() async throws {
        let server = try await exampleServer()
        let calls = LockedBox(0)
        server.route("/dogs/flaky") { _, writer in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            if call == 1 { try await writer.respond(status: 503) } else { try await writer.respondJSON(Dog(name: "Bo", breed: "pug")) }
        }
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.interceptors = [ErrorHandlingInterceptor(maxRetries: 1, handler: ClosureErrorHandler { outcome, _, retry, _ in
            switch outcome {
            case .response(let head, _) where head.status.code == 503 && retry == 0: .retry()
            case .response(let head, _) where head.status == .notFound: .fail(DogError.noSuchDog)
            case .failure(let error) where error.isConnectivityFailure: .fail(DogError.offline)
            default: .proceed
            }
        })]
        let client = APIClient(configuration: configuration, transport: transport)
        let dog = try await client.model(Request<Dog>.get("/dogs/flaky"), as: Dog.self)
        #expect(dog.name == "Bo")
        #expect(calls.current == 2, "retried once")
        do {
            _ = try await client.model(Request<Dog>.get("/dogs/missing"), as: Dog.self)
            Issue.record("expected an error")
        } catch {
            guard case .underlying(let underlying) = error else { Issue.record("\(error)"); return }
            #expect(underlying as? DogError == .noSuchDog)
        }
        // A transport error converted by the handler: nothing listens on port 1.
        let closed = APIClient(configuration: { var c = configuration; c.baseURL = URL(string: "http://127.0.0.1:1")!; return c }(), transport: transport)
        do {
            _ = try await closed.model(DogRequest.random, as: Dog.self)
            Issue.record("expected an error")
        } catch {
            guard case .underlying(let underlying) = error else { Issue.record("\(error)"); return }
            #expect(underlying as? DogError == .offline)
        }
        await server.shutdown()
    }

    @Test("the reachability check fails a request before it is sent")
    func reachability() async throws {
        let server = try await exampleServer()
        let monitor = ManualMonitor(.offline(.noLink))
        var configuration = ClientConfiguration(baseURL: server.baseURL)
        configuration.plugins = [ReachabilityPlugin(monitor: monitor)]
        let client = APIClient(configuration: configuration, transport: transport)
        await #expect(throws: NetworkError.self) { _ = try await client.model(DogRequest.random, as: Dog.self) }
        #expect(server.requests.isEmpty)
        monitor.status = .online(interface: "eth0", family: .ipv4)
        #expect(try await client.model(DogRequest.random, as: Dog.self).name == "Rex")
        await server.shutdown()
    }

    @Test("the four perform variants as publishers: data, model, model as an abstraction, completion only")
    func performVariants() async throws {
        let server = try await exampleServer()
        let client = APIClient(baseURL: server.baseURL, transport: transport)

        let data = try await value(of: client.dataPublisher(DogRequest.random))
        #expect(try JSONDecoder().decode(Dog.self, from: data.body) == Dog(name: "Rex", breed: "collie"))

        let dog = try await value(of: client.modelPublisher(DogRequest.random, as: Dog.self))
        #expect(dog.breed == "collie")

        let animal = try await value(of: client.modelPublisher(DogRequest.random, decoding: Dog.self, as: (any Animal).self))
        #expect(animal.name == "Rex")

        let done = await completion(of: client.completionPublisher(DogRequest.create(Dog(name: "Rex", breed: "collie"))))
        guard case .finished = done else { Issue.record("\(done)"); return }
        let failed = await completion(of: client.completionPublisher(Request<Void>.get("/status/500")))
        guard case .failure(.server(let response)) = failed else { Issue.record("\(failed)"); return }
        #expect(response.status.code == 500)
        await server.shutdown()
    }

    @Test("cancelling a publisher's subscription cancels the request on the wire")
    func cancellation() async throws {
        let server = try await exampleServer()
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        let cancellable = client.dataPublisher(Request<Data>.get("/delay/5000")).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        #expect(await server.waitForRequest(path: "/delay/5000") != nil)
        let connection = try #require(server.requests.last?.connectionID)
        cancellable.cancel()
        #expect(await server.waitUntilConnectionClosed(connection))
        await server.shutdown()
    }
}
