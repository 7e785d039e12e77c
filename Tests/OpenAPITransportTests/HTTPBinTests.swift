import Foundation
import HTTPCore
import HTTPTypes
import OpenAPIRuntime
import OpenAPITransport
import Testing
import TestSupport

/// The generated client against a real httpbin (an independent HTTP peer) on loopback.
@Suite("OpenAPITransport: a generated client against httpbin")
struct HTTPBinTests {
    private func client(_ wire: Wire) async throws -> Client {
        let bin = try await HTTPBinServer.shared()
        return makeClient(bin.baseURL, transport: APIClientTransport(client: makeAPIClient(wire, baseURL: bin.baseURL)))
    }

    @Test("PUT with a path segment to encode, a repeated query item, a header and a JSON body", arguments: Wire.allCases)
    func echo(_ wire: Wire) async throws {
        let echo = try await client(wire).echoAnything(
            path: .init(segment: "note 1"),
            query: .init(tag: ["x", "y&z"]),
            headers: .init(xCustom: "custom-value"),
            body: .json(.init(title: "hello", body: "wörld", tags: ["t"]))
        ).ok.body.json
        #expect(echo.method == "PUT")
        #expect(echo.url.contains("/anything/note%201?tag=x&tag=y%26z"), "\(echo.url)")
        guard case .case2(let tags) = echo.args?.additionalProperties["tag"] else {
            Issue.record("expected the repeated tag as a list: \(String(describing: echo.args))")
            return
        }
        #expect(tags == ["x", "y&z"])
        #expect(echo.headers.additionalProperties["X-Custom"] == "custom-value")
        #expect(echo.json == .init(title: "hello", body: "wörld", tags: ["t"]))
    }

    @Test("multipart/form-data as httpbin parses it", arguments: Wire.allCases)
    func multipart(_ wire: Wire) async throws {
        let echo = try await client(wire).postMultipart(body: .multipartForm([
            .caption(.init(payload: .init(body: HTTPBody("a caption")))),
            .file(.init(payload: .init(body: HTTPBody("file contents\n")), filename: "notes.txt")),
        ])).ok.body.json
        #expect(echo.form?.additionalProperties["caption"] == "a caption")
        #expect(echo.files?.additionalProperties["file"] == "file contents\n")
    }

    @Test("statuses: 200 and the documented 404 are output cases; 418 is undocumented", arguments: Wire.allCases)
    func statuses(_ wire: Wire) async throws {
        let client = try await client(wire)
        _ = try await client.getStatus(path: .init(code: 200)).ok
        guard case .notFound = try await client.getStatus(path: .init(code: 404)) else {
            Issue.record("expected .notFound")
            return
        }
        guard case .undocumented(let code, _) = try await client.getStatus(path: .init(code: 418)) else {
            Issue.record("expected .undocumented")
            return
        }
        #expect(code == 418)
    }
}
