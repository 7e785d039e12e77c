import AsyncHTTPClientTransport
import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A responder that answers with `chunks` and no `Content-Length`, so the server must frame it.
private struct ChunksResponder: Transport {
    var chunks: [String]

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        let (stream, continuation) = AsyncStream.makeStream(of: Data.self)
        for chunk in chunks { continuation.yield(Data(chunk.utf8)) }
        continuation.finish()
        return TransportResponse(head: HTTPResponse(status: .ok), body: ByteStream(stream))
    }
}

@Suite("LoopbackServer")
struct LoopbackServerTests {
    /// How long a request may wait for the server. The server's connections are tasks on the
    /// cooperative pool, two threads here, which the suites' start shares with some 700 tests:
    /// in one full run the earliest tests all finished at 10.0 s, and a server that closes a
    /// connection at once was not scheduled before a 10 s timeout, so the client saw `timedOut`
    /// where it should see `connectionLost`. A passing request never waits for this.
    static let patience: Duration = .seconds(120)

    /// Runs `body` with a server answering from `responder` and a transport to it, and shuts
    /// both down afterwards, also when `body` throws.
    private func withServer(_ responder: any Transport, _ body: (LoopbackServer, AsyncHTTPClientTransport) async throws -> Void) async throws {
        let server = try await LoopbackServer.start(answering: responder)
        let transport = AsyncHTTPClientTransport()
        do {
            try await body(server, transport)
        } catch {
            try await transport.shutdown()
            await server.shutdown()
            throw error
        }
        try await transport.shutdown()
        await server.shutdown()
    }

    /// `path` on `server`, as a request head.
    private func request(_ method: HTTPRequest.Method, _ path: String, on server: LoopbackServer) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: "\(server.host):\(server.port)", path: path)
    }

    @Test("a stub's routes answer real HTTP, and the stub records the request as it arrived")
    func answersThroughStub() async throws {
        struct Created: Codable, Equatable { var id: Int }
        let stub = StubTransport()
        stub.on(.post, "/users", respond: .json(#"{"id":7}"#, status: 201))
        try await withServer(stub) { server, transport in
            #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)")
            let client = APIClient(baseURL: server.baseURL, transport: transport)
            var request = Request<Created>.post("/users?notify=1", body: .json(["name": "Ada"]))
            request.headers[HTTPField.Name("X-Trace")!] = "t-42"
            let response = try await client.response(request, as: Created.self)
            #expect(response.status.code == 201)
            #expect(response.body == Created(id: 7))

            let recorded = try #require(stub.recordedRequests.first)
            #expect(stub.recordedRequests.count == 1)
            #expect(recorded.head.method == .post)
            #expect(recorded.head.scheme == "http")
            #expect(recorded.head.authority == "127.0.0.1:\(server.port)")
            #expect(recorded.head.path == "/users?notify=1")
            #expect(recorded.head.headerFields[HTTPField.Name("X-Trace")!] == "t-42")
            #expect(recorded.head.headerFields[.contentType] == "application/json")
            let sent = try JSONSerialization.jsonObject(with: try #require(recorded.body)) as? [String: String]
            #expect(sent == ["name": "Ada"])
        }
    }

    @Test("stubs answer in turn over one connection; unmatched paths get the fallback")
    func stubsInTurn() async throws {
        let stub = StubTransport()
        stub.on(.get, "/flaky", respond: .status(503), .json(#"{"ok":true}"#))
        try await withServer(stub) { server, transport in
            var answers: [String] = []
            for path in ["/flaky", "/flaky", "/nowhere"] {
                let response = try await transport.send(request(.get, path, on: server), body: nil, timeout: Self.patience)
                let body = String(decoding: try await response.body.collect(upTo: 1024), as: UTF8.self)
                answers.append("\(response.head.status.code) \(body)")
            }
            #expect(answers == ["503 ", #"200 {"ok":true}"#, "404 "])
            #expect(stub.recordedRequests.map(\.body) == [nil, nil, nil])
        }
    }

    @Test("a body without Content-Length goes out chunked and arrives whole")
    func chunkedBody() async throws {
        try await withServer(ChunksResponder(chunks: ["alpha ", "beta ", "gamma"])) { server, transport in
            let response = try await transport.send(request(.get, "/stream", on: server), body: nil, timeout: Self.patience)
            #expect(response.head.headerFields[.transferEncoding] == "chunked")
            #expect(response.head.headerFields[.contentLength] == nil)
            #expect(String(decoding: try await response.body.collect(upTo: 1024), as: UTF8.self) == "alpha beta gamma")
        }
    }

    @Test("HEAD and 204 answers carry no body, and the connection stays usable")
    func noBodyAnswers() async throws {
        let stub = StubTransport()
        stub.on(.head, "/document", respond: StubTransport.Stub(body: Data("hello".utf8)))
        stub.on(.get, "/document", respond: StubTransport.Stub(body: Data("hello".utf8)))
        stub.on(.delete, "/document", respond: .status(204))
        try await withServer(stub) { server, transport in
            let head = try await transport.send(request(.head, "/document", on: server), body: nil, timeout: Self.patience)
            #expect(head.head.headerFields[.contentLength] == "5")
            #expect(try await head.body.collect(upTo: 1024).isEmpty)
            let deleted = try await transport.send(request(.delete, "/document", on: server), body: nil, timeout: Self.patience)
            #expect(deleted.head.status.code == 204)
            #expect(deleted.head.headerFields[.contentLength] == nil)
            #expect(try await deleted.body.collect(upTo: 1024).isEmpty)
            let get = try await transport.send(request(.get, "/document", on: server), body: nil, timeout: Self.patience)
            #expect(String(decoding: try await get.body.collect(upTo: 1024), as: UTF8.self) == "hello")
        }
    }

    @Test("a failure stub closes the connection unanswered; a delay outlasts the client's timeout")
    func failuresOnTheWire() async throws {
        let stub = StubTransport()
        stub.on(.get, "/lost", respond: .failure(.transport(TransportFailure(.connectionLost, "dropped"))))
        stub.on(.get, "/slow", respond: StubTransport.Stub(delay: .seconds(60)))
        try await withServer(stub) { server, transport in
            do {
                _ = try await transport.send(request(.get, "/lost", on: server), body: nil, timeout: Self.patience)
                Issue.record("the server answered")
            } catch NetworkError.transport(let failure) {
                #expect(failure.kind == .connectionLost)
            }
            do {
                _ = try await transport.send(request(.get, "/slow", on: server), body: nil, timeout: .milliseconds(300))
                Issue.record("the server answered")
            } catch NetworkError.transport(let failure) {
                #expect(failure.kind == .timedOut)
            }
        }
    }

    @Test("URLSessionTransport reaches it too")
    func urlSession() async throws {
        let stub = StubTransport()
        stub.on(.get, "/ping", respond: .json(#""pong""#))
        let server = try await LoopbackServer.start(answering: stub)
        let client = APIClient(baseURL: server.baseURL, transport: URLSessionTransport())
        let answer = try await client.model(Request<String>.get("/ping"), as: String.self)
        await server.shutdown()
        #expect(answer == "pong")
    }

    @Test("after shutdown the port takes no connections")
    func shutdownClosesThePort() async throws {
        let server = try await LoopbackServer.start(answering: StubTransport(fallback: .status(200)))
        let transport = AsyncHTTPClientTransport()
        let head = request(.get, "/", on: server)
        #expect(try await transport.send(head, body: nil, timeout: Self.patience).head.status.code == 200)
        await server.shutdown()
        let fresh = AsyncHTTPClientTransport()
        do {
            _ = try await fresh.send(head, body: nil, timeout: Self.patience)
            Issue.record("a closed server answered")
        } catch NetworkError.transport(let failure) {
            #expect(failure.kind == .cannotConnect)
        }
        try await fresh.shutdown()
        try await transport.shutdown()
    }
}
