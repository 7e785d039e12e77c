import CourierTesting
import Foundation
@testable import HTTPCore
import HTTPTypes
import Testing

@Suite("URL building fast path")
struct URLFastPathTests {
    @Test("simple paths are appended as URLComponents would")
    func simplePaths() throws {
        let cases: [(String, String, String)] = [
            ("http://127.0.0.1:8080", "/page", "http://127.0.0.1:8080/page"),
            ("http://127.0.0.1:8080/", "/page", "http://127.0.0.1:8080/page"),
            ("https://api.test/v1", "users/42", "https://api.test/v1/users/42"),
            ("https://api.test/v1/", "/users/42", "https://api.test/v1/users/42"),
            ("https://api.test/v1", "/a%20b/c", "https://api.test/v1/a%20b/c"),
        ]
        for (base, path, expected) in cases {
            let url = try #require(APIClient.appending(simplePath: path, to: URL(string: base)!))
            #expect(url.absoluteString == expected)
        }
    }

    @Test("paths needing encoding or a query, and bases with a query, take the slow path")
    func slowPath() {
        let base = URL(string: "https://api.test/v1")!
        #expect(APIClient.appending(simplePath: "/a b", to: base) == nil)
        #expect(APIClient.appending(simplePath: "/search?q=x", to: base) == nil)
        #expect(APIClient.appending(simplePath: "/ü", to: base) == nil)
        #expect(APIClient.appending(simplePath: "", to: base) == nil)
        #expect(APIClient.appending(simplePath: "/x", to: URL(string: "https://api.test/v1?key=1")!) == nil)
    }

    @Test("the client builds the same URLs through both paths")
    func throughClient() async throws {
        let stub = StubTransport(fallback: .status(200))
        let client = APIClient(baseURL: URL(string: "https://api.test/v1/")!, transport: stub)
        try await client.send(Request<Void>.get("/users/42"))
        try await client.send(Request<Void>.get("/users/a b", query: [URLQueryItem(name: "q", value: "x y")]))
        let urls = stub.recordedRequests.compactMap { $0.head.url?.absoluteString }
        #expect(urls == ["https://api.test/v1/users/42", "https://api.test/v1/users/a%20b?q=x%20y"])
    }
}
