import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

/// One suite for every transport in ``TransportFactories/all``, run through `APIClient`
/// against the loopback ``TestHTTPServer`` (and nginx for TLS).
@Suite("Transport conformance")
struct TransportConformance {
    @Test("every method reaches the server with its body", arguments: TransportFactories.all)
    func everyMethod(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            let body = Data("courier".utf8)
            for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete, .options] {
                let carriesBody = method == .post || method == .put || method == .patch
                let request = Request<Data>(method: method, path: "/echo", body: carriesBody ? .data(body) : .none)
                let response = try await harness.client.send(request)
                let echo = try harness.echo(response)
                #expect(response.status == .ok)
                #expect(echo.method == method.rawValue)
                #expect(echo.bodySize == (carriesBody ? body.count : 0))
                if carriesBody { #expect(echo.bodyCRC32 == CRC32.checksum(body)) }
            }
            let head = try await harness.client.send(Request<Data>.head("/bytes/1000"))
            #expect(head.status == .ok)
            #expect(head.body.isEmpty)
            #expect(head.headers[.contentLength] == "1000")
            #expect(harness.server.requests.last?.method == "HEAD")
        }
    }

    @Test("query items and multi-value headers go both ways", arguments: TransportFactories.all)
    func queryAndHeaders(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            var headers = HTTPFields()
            headers.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "one"))
            headers.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "two"))
            let query = [
                URLQueryItem(name: "tag", value: "a"),
                URLQueryItem(name: "tag", value: "b c"),
                URLQueryItem(name: "sym", value: "&=?/ü"),
                URLQueryItem(name: "response-header", value: "X-Reply:first"),
                URLQueryItem(name: "response-header", value: "X-Reply:second"),
            ]
            let response = try await harness.client.send(Request<Data>.get("/echo", query: query, headers: headers))
            let echo = try harness.echo(response)
            #expect(echo.query.filter { $0.name == "tag" }.map(\.value) == ["a", "b c"])
            #expect(echo.query.first { $0.name == "sym" }?.value == "&=?/ü")
            let sent = echo.values(of: "X-Multi").flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            #expect(sent == ["one", "two"])
            let received = response.headers[values: HTTPField.Name("X-Reply")!].flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            #expect(received == ["first", "second"])
        }
    }

    @Test("204 has no body", arguments: TransportFactories.all)
    func noContent(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            let response = try await harness.client.send(Request<Data>.get("/no-content"))
            #expect(response.status.code == 204)
            #expect(response.body.isEmpty)
            try await harness.client.send(Request<Void>.delete("/status/204"))
        }
    }

    @Test("gzip-encoded responses arrive decoded", arguments: TransportFactories.all)
    func gzip(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            let response = try await harness.client.send(Request<Data>.get("/gzip"))
            #expect(response.body == GzipFixture.plain)
        }
    }
}
