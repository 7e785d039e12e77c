import AsyncHTTPClient
@testable import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import HTTPTypes
import NIOHTTP1
import Testing
import TestSupport

@Suite("AsyncHTTPClientTransport: conversions on the hot path")
struct ConversionTests {
    static let get = HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/page")

    @Test("a client that decodes bodies asks for gzip and deflate itself, once, and keeps the caller's Accept-Encoding")
    func acceptEncoding() throws {
        let asking = try HTTPClientRequest(Self.get, body: nil, acceptsCompression: true)
        #expect(asking.headers["accept-encoding"] == [HTTPClientRequest.acceptedEncodings])
        #expect(asking.url == "http://example.com/page")

        var own = Self.get
        own.headerFields[.acceptEncoding] = "identity"
        let kept = try HTTPClientRequest(own, body: nil, acceptsCompression: true)
        #expect(kept.headers["accept-encoding"] == ["identity"])

        let plain = try HTTPClientRequest(Self.get, body: nil)
        #expect(plain.headers["accept-encoding"].isEmpty)
    }

    @Test("content codings are read in place: the decoded ones pass, the first other one is named")
    func unsupportedEncodings() {
        func check(_ values: [String]) -> String? {
            AsyncHTTPClientTransport.unsupportedEncoding(in: HTTPHeaders(values.map { ("Content-Encoding", $0) } + [("Content-Type", "br")]))
        }
        #expect(check([]) == nil)
        #expect(check(["gzip"]) == nil)
        #expect(check(["GZIP, identity", " x-gzip ", "Deflate"]) == nil)
        #expect(check([",, gzip ,"]) == nil)
        #expect(check(["gzip, br"]) == "br")
        #expect(check(["ZSTD"]) == "zstd")
        #expect(check(["gzip", "\tbr\t"]) == "br")
        #expect(check(["gzipx"]) == "gzipx")
    }

    @Test("the response head keeps every field; common names in any case become the canonical names")
    func responseHead() {
        let headers = HTTPHeaders([
            ("Content-Type", "application/json"), ("CONTENT-LENGTH", "12"), ("date", "today"),
            ("X-Request-ID", "abc"), ("Content-Typf", "other"), ("Server", "bench"),
        ])
        let head = HTTPResponse(HTTPClientResponse(status: .ok, headers: headers))
        #expect(head.status == .ok)
        #expect(head.headerFields[.contentType] == "application/json")
        #expect(head.headerFields[.contentLength] == "12")
        #expect(head.headerFields[.date] == "today")
        #expect(head.headerFields[.server] == "bench")
        #expect(head.headerFields[HTTPField.Name("x-request-id")!] == "abc")
        #expect(head.headerFields[HTTPField.Name("content-typf")!] == "other")
        #expect(head.headerFields.count == 6)
        #expect(HTTPField.Name.common("Content\u{0D}Type") == nil)
        #expect(HTTPField.Name.common("content-type") == .contentType)
    }
}

@Suite("AsyncHTTPClientTransport: decompression")
struct DecompressionTests {
    @Test("by default a request asks for gzip and deflate once, and a gzipped answer arrives decoded")
    func decodes() async throws {
        let server = try await TestHTTPServer.start()
        server.script("/gzip", headers: [HeaderField(name: "Content-Encoding", value: "gzip")], body: GzipFixture.compressed)
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        let response = try await client.send(Request<Data>.get("/gzip"))
        #expect(response.body == GzipFixture.plain)
        let request = await server.waitForRequest(path: "/gzip")
        #expect(request?.values(of: "accept-encoding") == [HTTPClientRequest.acceptedEncodings])
        try await transport.shutdown()
        await server.shutdown()
    }

    /// 64 KiB of zeros, gzipped (`gzip -9n`): 96 bytes that expand 683 times.
    static let bombBody = Data(base64Encoded: "H4sIAAAAAAACA+3BAQEAAACAkP6v7ggKAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAauuOl9cAAAEA")!

    @Test("by default a body that expands past the ratio limit of 25 fails as invalidResponse")
    func bomb() async throws {
        let server = try await TestHTTPServer.start()
        server.script("/bomb", headers: [HeaderField(name: "Content-Encoding", value: "gzip")], body: Self.bombBody)
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        await #expect {
            _ = try await client.send(Request<Data>.get("/bomb"))
        } throws: { error in
            guard case NetworkError.transport(let failure) = error else { return false }
            return failure.kind == .invalidResponse
        }
        try await transport.shutdown()
        await server.shutdown()
    }
}
