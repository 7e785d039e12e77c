import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

extension TransportConformance {
    @Test("a response slower than the timeout fails with timedOut", arguments: TransportFactories.all)
    func timeoutBeforeHead(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            var request = Request<Data>.get("/delay/120000")
            request.timeout = .milliseconds(300)
            await expectTransportFailure(.timedOut) { _ = try await harness.client.send(request) }
        }
    }

    @Test("a body that stalls fails with timedOut", arguments: TransportFactories.all)
    func timeoutMidBody(_ factory: TransportFactory) async throws {
        try await Harness.run(factory, setup: .init(readTimeout: .milliseconds(500))) { harness in
            var request = Request<Data>.get("/stall/1000")
            request.timeout = .milliseconds(500)
            await expectTransportFailure(.timedOut) { _ = try await harness.client.send(request) }
        }
    }

    @Test("cancelling the task cancels the request on the wire", arguments: TransportFactories.all)
    func cancellation(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            for path in ["/delay/20000", "/stall/1000"] {
                let client = harness.client
                let task = Task { try await client.send(Request<Data>.get(path)) }
                let received = try #require(await harness.server.waitForRequest(path: path), "the server never saw \(path)")
                task.cancel()
                await expectNetworkError("cancelled", { _ = try await task.value }, matches: { error in
                    if case .cancelled = error { return true }
                    return false
                })
                #expect(await harness.server.waitUntilConnectionClosed(received.connectionID), "the server's connection for \(path) stayed open")
            }
        }
    }

    @Test("a closed port fails with cannotConnect", arguments: TransportFactories.all)
    func connectionRefused(_ factory: TransportFactory) async throws {
        // Held bound and not listening for the whole test: a server's port after its shutdown
        // was once another test's new server's, and the call succeeded.
        let closed = try ReservedLoopbackPort()
        try await Harness.run(factory) { harness in
            await expectTransportFailure(.cannotConnect) { _ = try await harness.client.send(Request<Data>.get("http://127.0.0.1:\(closed.port)/echo")) }
        }
        withExtendedLifetime(closed) {}
    }

    @Test("a host under .invalid fails with dns", arguments: TransportFactories.all)
    func dnsFailure(_ factory: TransportFactory) async throws {
        // Every Courier transport answers `.invalid` names itself (RFC 6761, `SpecialUseDomain`),
        // so this never asks the system resolver, which on this machine is off the host.
        try await Harness.run(factory) { harness in
            await expectTransportFailure(.dns) { _ = try await harness.client.send(Request<Data>.get("http://courier-conformance.invalid/echo")) }
        }
    }

    @Test("a connection dropped mid-body fails with connectionLost", arguments: TransportFactories.all)
    func droppedConnection(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            await expectTransportFailure(.connectionLost) { _ = try await harness.client.send(Request<Data>.get("/drop/5000")) }
        }
    }

    @Test("bytes that are not HTTP fail with invalidResponse", arguments: TransportFactories.all)
    func garbage(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            await expectTransportFailure(.invalidResponse) { _ = try await harness.client.send(Request<Data>.get("/garbage")) }
        }
    }

    @Test("an untrusted certificate fails with tls; trusting its CA lets the call through (over HTTP/2 where offered)", arguments: TransportFactories.all)
    func tls(_ factory: TransportFactory) async throws {
        let nginx = try await NginxTLSServer.start()
        defer { nginx.stop() }
        let untrusted = factory.make(.init())
        let rejecting = APIClient(baseURL: nginx.baseURL, transport: untrusted)
        await expectTransportFailure(.tls) { _ = try await rejecting.send(Request<Data>.get("/")) }
        try await factory.shutdown(untrusted)

        guard factory.capabilities.trustsCustomCA else { return }
        for host in ["127.0.0.1", "localhost"] {
            let trusted = factory.make(.init(trustedCAFile: nginx.caCertificatePath))
            let accepting = APIClient(baseURL: URL(string: "https://\(host):\(nginx.port)")!, transport: trusted)
            let response = try await accepting.send(Request<Data>.get("/"))
            #expect(response.status == .ok)
            #expect(String(decoding: response.body, as: UTF8.self) == NginxTLSServer.body)
            let expected = factory.capabilities.negotiatesHTTP2 ? "HTTP/2.0" : "HTTP/1.1"
            #expect(response.headers[HTTPField.Name("X-Protocol")!] == expected)
            try await factory.shutdown(trusted)
        }
    }

    @Test("a 401 with WWW-Authenticate comes back with its body, for data, model and plain calls", arguments: TransportFactories.all, [
        #"Bearer error="invalid_token""#, #"Basic realm="api""#,
    ])
    func challengeKeepsBody(_ factory: TransportFactory, challenge: String) async throws {
        try await Harness.run(factory) { harness in
            let problem = Data(#"{"title":"token expired"}"#.utf8)
            harness.server.script(
                "/private", status: 401,
                headers: [HeaderField(name: "WWW-Authenticate", value: challenge),
                          HeaderField(name: "Content-Type", value: "application/json")],
                body: problem
            )
            struct Model: Decodable {}
            let calls: [@Sendable () async throws -> Void] = [
                { _ = try await harness.client.send(Request<Data>.get("/private")) },
                { _ = try await harness.client.send(Request<Model>.get("/private")) },
                { _ = try await harness.client.send(Request<Void>.get("/private")) },
            ]
            for call in calls {
                await #expect {
                    try await call()
                } throws: { error in
                    guard case NetworkError.unauthorized(let response) = error else { return false }
                    return response.body == problem && response.headers[.wwwAuthenticate] == challenge
                }
            }
        }
    }
}
