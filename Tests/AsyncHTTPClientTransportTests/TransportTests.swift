import AsyncHTTPClient
@testable import AsyncHTTPClientTransport
import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import NIOCore
import NIOSSL
import Testing
import TestSupport

@Suite("AsyncHTTPClientTransport")
struct TransportTests {
    @Test("host names are taken from authorities")
    func hostNames() {
        #expect(SpecialUseDomain.hostName("example.com") == "example.com")
        #expect(SpecialUseDomain.hostName("example.com:8080") == "example.com")
        #expect(SpecialUseDomain.hostName("user:pw@example.com:8080") == "example.com")
        #expect(SpecialUseDomain.hostName("[::1]:8080") == "::1")
    }

    @Test("names under .invalid are recognised (RFC 6761)")
    func specialUseInvalid() {
        #expect(SpecialUseDomain.isInvalid("invalid"))
        #expect(SpecialUseDomain.isInvalid("a.b.INVALID"))
        #expect(SpecialUseDomain.isInvalid("x.invalid."))
        #expect(!SpecialUseDomain.isInvalid("invalid.example.com"))
        #expect(!SpecialUseDomain.isInvalid("notinvalid"))
        #expect(SpecialUseDomain.failure(for: HTTPRequest(method: .get, scheme: "http", authority: "x.INVALID:80", path: "/")) != nil)
        #expect(SpecialUseDomain.failure(for: HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8080", path: "/")) == nil)
    }

    @Test("the client configuration turns redirects off and keeps the settings")
    func clientConfiguration() {
        var configuration = AsyncHTTPClientTransport.Configuration(connectTimeout: .seconds(3), readTimeout: nil, maximumConnectionsPerHost: 4)
        configuration.trustRootCertificates(inPEMFile: "/tmp/ca.pem")
        let client = configuration.clientConfiguration
        #expect(client.timeout.connect == .seconds(3))
        #expect(client.timeout.read == nil)
        #expect(client.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit == 4)
        #expect(client.connectionPool.retryConnectionEstablishment == false)
        #expect(client.tlsConfiguration?.additionalTrustRoots.count == 1)
        #expect("\(client.redirectConfiguration)".contains("disallow"))
    }

    @Test("a request without an authority is an invalid request; nothing is sent")
    func invalidRequest() async throws {
        let transport = AsyncHTTPClientTransport()
        await #expect(throws: NetworkError.self) {
            _ = try await transport.send(HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/"), body: nil, timeout: nil)
        }
        try await transport.shutdown()
        try await transport.shutdown()
    }

    @Test("a transport over an injected client sends through it, and its shutdown leaves that client running")
    func injectedClient() async throws {
        let stub = StubTransport()
        stub.on(.get, "/moved", respond: .status(302, headers: [.location: "/target"]))
        stub.on(.get, "/target", respond: .status(200))
        let server = try await LoopbackServer.start(answering: stub)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(redirectConfiguration: .disallow))
        let transport = AsyncHTTPClientTransport(client: client)
        #expect(transport.client === client)
        let head = { (path: String) in HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path) }

        // The client's own configuration is in force: it does not follow the redirect.
        let moved = try await transport.send(head("/moved"), body: nil, timeout: .hangGuard)
        await moved.body.discard()
        #expect(moved.head.status.code == 302)
        #expect(moved.head.headerFields[.location] == "/target")
        #expect(stub.recordedRequests.map(\.head.path) == ["/moved"])

        // Shutting the transport down leaves a client it does not own running...
        try await transport.shutdown()
        let after = try await transport.send(head("/target"), body: nil, timeout: .hangGuard)
        await after.body.discard()
        #expect(after.head.status.code == 200)
        #expect(stub.recordedRequests.count == 2)

        // ...and once its owner shuts it down, the transport can no longer send: it had no other.
        try await client.shutdown()
        await #expect(throws: NetworkError.self) {
            _ = try await transport.send(head("/target"), body: nil, timeout: .hangGuard)
        }
        #expect(stub.recordedRequests.count == 2)
        await server.shutdown()
    }

    @Test("a cancelled task fails with cancelled before anything is sent")
    func cancelledBeforeSend() async throws {
        let transport = AsyncHTTPClientTransport()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:9", path: "/"), body: nil, timeout: nil)
        }
        do {
            _ = try await task.value
            Issue.record("the send succeeded")
        } catch NetworkError.cancelled {
        } catch {
            Issue.record("expected .cancelled, got \(error)")
        }
        try await transport.shutdown()
    }

    @Test("a transport dropped without shutdown shuts its own client down")
    func shutdownOnDeinit() async throws {
        weak var client: HTTPClient?
        do {
            let transport = AsyncHTTPClientTransport()
            client = transport.client
        }
        // The client stays alive while it shuts down, then goes away.
        #expect(await eventually { client == nil }, "the HTTPClient was never shut down and released")
    }
}

/// A responder that closes the connection without an answer at the requests numbered in
/// `dropped` (counting from 1), and answers 200 otherwise.
private final class DroppingResponder: Transport {
    let dropped: Set<Int>
    let seen = LockedBox<[String]>([])

    init(dropping dropped: Set<Int>) { self.dropped = dropped }

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        let number = seen.withLock { seen in
            seen.append("\(request.method) \(request.path ?? "")")
            return seen.count
        }
        if dropped.contains(number) { throw NetworkError.transport(TransportFailure(.other, "dropped by the test")) }
        return TransportResponse(head: HTTPResponse(status: .ok), body: ByteStream(data: Data("ok".utf8)))
    }
}

@Suite("AsyncHTTPClientTransport: a kept-alive connection the server closed")
struct StaleConnectionTests {
    @Test("an idempotent request the server dropped on a reused connection is sent once more, on a new one")
    func idempotentResent() async throws {
        let responder = DroppingResponder(dropping: [2])
        let server = try await LoopbackServer.start(answering: responder)
        let transport = AsyncHTTPClientTransport()
        let head = { (method: HTTPRequest.Method, path: String) in
            HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path)
        }
        for (method, path) in [(HTTPRequest.Method.get, "/first"), (.get, "/second")] {
            let response = try await transport.send(head(method, path), body: nil, timeout: .hangGuard)
            #expect(try await response.body.collect(upTo: 1024) == Data("ok".utf8))
            #expect(response.head.status == .ok)
        }
        #expect(responder.seen.current == ["GET /first", "GET /second", "GET /second"])

        // A PUT with its body in memory goes again too.
        let put = DroppingResponder(dropping: [2])
        let putServer = try await LoopbackServer.start(answering: put)
        let putHead = HTTPRequest(method: .put, scheme: "http", authority: "127.0.0.1:\(putServer.port)", path: "/item")
        for _ in 0..<2 {
            let response = try await transport.send(putHead, body: .data(Data("v".utf8)), timeout: .hangGuard)
            await response.body.discard()
            #expect(response.head.status == .ok)
        }
        #expect(put.seen.current == ["PUT /item", "PUT /item", "PUT /item"])
        try await transport.shutdown()
        await server.shutdown()
        await putServer.shutdown()
    }

    @Test("a POST the server dropped is not sent again: the caller sees connectionLost")
    func postNotResent() async throws {
        let responder = DroppingResponder(dropping: [2])
        let server = try await LoopbackServer.start(answering: responder)
        let transport = AsyncHTTPClientTransport()
        let head = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/events")
        let first = try await transport.send(head, body: .data(Data("1".utf8)), timeout: .hangGuard)
        await first.body.discard()
        await expectConnectionLost {
            _ = try await transport.send(head, body: .data(Data("2".utf8)), timeout: .hangGuard)
        }
        #expect(responder.seen.current == ["POST /events", "POST /events"])
        try await transport.shutdown()
        await server.shutdown()
    }

    @Test("a GET dropped twice fails after its one resend")
    func resentOnce() async throws {
        let responder = DroppingResponder(dropping: [2, 3])
        let server = try await LoopbackServer.start(answering: responder)
        let transport = AsyncHTTPClientTransport()
        let head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/page")
        let first = try await transport.send(head, body: nil, timeout: .hangGuard)
        await first.body.discard()
        await expectConnectionLost {
            _ = try await transport.send(head, body: nil, timeout: .hangGuard)
        }
        #expect(responder.seen.current.count == 3)
        try await transport.shutdown()
        await server.shutdown()
    }

    private func expectConnectionLost(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            try await body()
            Issue.record("the send succeeded", sourceLocation: sourceLocation)
        } catch NetworkError.transport(let failure) where failure.kind == .connectionLost {
        } catch {
            Issue.record("expected connectionLost, got \(error)", sourceLocation: sourceLocation)
        }
    }
}

@Suite("AsyncHTTPClientTransport: TLS defaults")
struct TLSDefaultTests {
    @Test("the default TLS configuration offers TLS 1.2 at the oldest (NIOSSL's own default allows 1.0)")
    func tlsMinimum() {
        #expect(AsyncHTTPClientTransport.Configuration().tls.minimumTLSVersion == .tlsv12)
    }
}
