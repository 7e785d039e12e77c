import Foundation
import HTTPCore
import TestSupport
import HTTPTypes
import Testing

/// Statuses, authentication and redirects against httpbin.
@Suite("httpbin: statuses, auth and redirects")
struct HTTPBinStatusTests {
    @Test("/status/{code} becomes the NetworkError case for that code", arguments: Transports.all, [401, 403, 404, 418, 500, 503])
    func statusMapping(_ transport: NamedTransport, code: Int) async throws {
        let bin = try await HTTPBinServer.shared()
        do {
            try await bin.client(transport).send(Request<Void>.get("/status/\(code)"))
            Issue.record("status \(code) did not throw")
        } catch {
            #expect(error.status?.code == code)
            switch (code, error) {
            case (401, .unauthorized), (403, .forbidden), (404, .notFound), (418, .client), (500, .server), (503, .server):
                break
            default:
                Issue.record("status \(code) became \(error)")
            }
        }
    }

    struct BasicAuth: Decodable { var authenticated: Bool; var user: String }

    @Test("/basic-auth/u/p without credentials is unauthorized", arguments: Transports.all)
    func basicAuthWithout(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        await #expect {
            try await bin.client(transport).send(Request<BasicAuth>.get("/basic-auth/u/p"))
        } throws: { error in
            guard case NetworkError.unauthorized(let response) = error else { return false }
            return response.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true
        }
    }

    @Test("/basic-auth/u/p with credentials authenticates", arguments: Transports.all)
    func basicAuthWith(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let credentials = Data("u:p".utf8).base64EncodedString()
        let auth = try await bin.client(transport).send(
            Request<BasicAuth>.get("/basic-auth/u/p", headers: [.authorization: "Basic \(credentials)"])
        ).body
        #expect(auth.authenticated)
        #expect(auth.user == "u")
    }

    /// httpbin's relative chain (`/redirect/3`) and absolute chain (`/absolute-redirect/2`).
    static let redirectChains: [(path: String, hops: Int)] = [("/redirect/3", 3), ("/absolute-redirect/2", 2)]

    @Test("/redirect/3 and /absolute-redirect/2 are followed by the client, hop by hop", arguments: Transports.all, redirectChains)
    func redirectChain(_ transport: NamedTransport, chain: (path: String, hops: Int)) async throws {
        let bin = try await HTTPBinServer.shared()
        let response = try await bin.client(transport).send(Request<Data>.get(chain.path))
        #expect(response.status == .ok)
        #expect(response.url?.path == "/get")
        #expect(response.metrics.redirects == chain.hops)
    }

    @Test("the transport returns a 3xx as it is, Location and all", arguments: Transports.all)
    func transportDoesNotFollow(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let response = try await transport.make().send(
            HTTPRequest(method: .get, url: bin.url("/redirect/2")), body: nil, timeout: .hangGuard
        )
        _ = try await response.body.collect(upTo: 1 << 20)
        #expect(response.head.status.code == 302)
        #expect(response.head.headerFields[.location] == "/relative-redirect/1")
    }

    @Test("a client with maxRedirects 0 reports the 3xx as an unacceptable status", arguments: Transports.all)
    func redirectsOff(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let client = bin.client(transport) { $0.maxRedirects = 0 }
        await #expect {
            try await client.send(Request<Data>.get("/absolute-redirect/1"))
        } throws: { error in
            guard case NetworkError.unacceptableStatus(let response) = error else { return false }
            return response.status.code == 302 && response.headers[.location]?.hasSuffix("/get") == true
        }
    }
}
