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

    /// The same path, query and body against an endpoint that names its base URL itself, which
    /// takes the URL path.
    struct Probe: Endpoint {
        var baseURL: URL?
        var path: String
        var query: [URLQueryItem]
        var method: HTTPRequest.Method { .post }
        var body: RequestContent { .text("12345") }
    }

    @Test("a head built from the base's parts equals the head parsed from the URL", arguments: [
        "http://127.0.0.1:8080", "http://127.0.0.1:8080/", "https://api.test/v1", "https://api.test/v1/",
        "http://[::1]:9000/api", "https://API.Test:443/x%20y/", "http://h", "https://user:pw@api.test/v1",
    ])
    func headWithoutURL(base: String) throws {
        let client = APIClient(baseURL: URL(string: base)!, transport: StubTransport())
        #expect((client.baseHead == nil) == base.contains("@"), "plain bases take the fast head; one with user info does not")
        let paths = ["/page", "users/42", "/a%20b/c", "/x/", "/", "/a b", "/search?q=1"]
        let queries: [[URLQueryItem]] = [[], [URLQueryItem(name: "q", value: "x y")], [URLQueryItem(name: "a", value: "1"), URLQueryItem(name: "b", value: nil)],
                                         [URLQueryItem(name: "ü", value: "&=/")]]
        for path in paths {
            for query in queries {
                let fast = try client.request(for: Probe(baseURL: nil, path: path, query: query))
                let slow = try client.request(for: Probe(baseURL: URL(string: base)!, path: path, query: query))
                #expect(fast.head.scheme == slow.head.scheme && fast.head.authority == slow.head.authority && fast.head.path == slow.head.path,
                        "\(base) + \(path) \(query): \(fast.head) vs \(slow.head)")
                #expect(fast.head.headerFields == slow.head.headerFields)
                #expect(fast.url == slow.url)
            }
        }
    }

    /// Content that reads the draft's URL (which the fast route parses only when read) and
    /// another that replaces it (which sends the request through the URL route).
    struct URLReader: Endpoint {
        var path: String
        var replacement: URL?
        var method: HTTPRequest.Method { .get }
        var body: RequestContent {
            RequestContent { [replacement] draft, _ in
                draft.headers[HTTPField.Name("X-Draft-URL")!] = draft.url.absoluteString
                if let replacement { draft.url = replacement }
            }
        }
    }

    @Test("a draft made without a URL still shows content its URL, and a URL content sets is used")
    func deferredDraftURL() throws {
        for base in ["https://api.test/v1", "https://api.test/v1/", "http://127.0.0.1:8080"] {
            let client = APIClient(baseURL: URL(string: base)!, transport: StubTransport())
            for path in ["/page", "users/42", "/x/"] {
                let built = try client.request(for: URLReader(path: path))
                let expected = try #require(APIClient.appending(simplePath: path, to: URL(string: base)!))
                #expect(built.head.headerFields[HTTPField.Name("X-Draft-URL")!] == expected.absoluteString)
                #expect(built.url == expected)
            }
            let elsewhere = URL(string: "https://other.test/else")!
            let replaced = try client.request(for: URLReader(path: "/page", replacement: elsewhere))
            #expect(replaced.url == elsewhere)
        }
    }

    @Test("which paths skip the URL: plain ones, not those with escapes, a scheme or nothing")
    func plainPaths() {
        for path in ["/page", "users/42", "/a:b", "/x/", "/", "/a-b_c.d~e!$&'()*+,;=@"] {
            #expect(APIClient.isPlainPath(path), "\(path)")
        }
        for path in ["", "/a%20b", "a:b", "http://other.test/x", "/a b", "/q?x=1", "/ü", "/a#f"] {
            #expect(!APIClient.isPlainPath(path), "\(path)")
        }
    }
}
