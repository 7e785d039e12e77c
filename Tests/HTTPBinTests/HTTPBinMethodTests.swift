import Foundation
import HTTPCore
import TestSupport
import HTTPTypes
import Testing

/// Methods, query strings and request bodies against httpbin, through ``APIClient``.
@Suite("httpbin: methods, queries and bodies")
struct HTTPBinMethodTests {
    @Test("GET /get sends repeated and reserved query values intact", arguments: Transports.all)
    func getWithQuery(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let request = Request<HTTPBinEcho<NoJSON>>.get("/get", query: [
            URLQueryItem(name: "a", value: "1"),
            URLQueryItem(name: "a", value: "2"),
            URLQueryItem(name: "q", value: "x&y=z ü+/"),
        ])
        let echo = try await bin.client(transport).send(request).body
        #expect(echo.args["a"]?.values == ["1", "2"])
        #expect(echo.args["q"]?.values == ["x&y=z ü+/"])
    }

    @Test("POST /post with a JSON body", arguments: Transports.all)
    func postJSON(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let greeting = Greeting(message: "héllo \"world\"", count: 3, tags: ["a", "b"])
        let echo = try await bin.client(transport).send(Request<HTTPBinEcho<Greeting>>.post("/post", body: greeting)).body
        #expect(echo.json == greeting)
        #expect(echo.headers["Content-Type"] == "application/json")
    }

    @Test("POST /post with a form-urlencoded body built with PercentEncoding", arguments: Transports.all)
    func postForm(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let pairs = [("name", "Ada Lovelace"), ("lang", "en&fr=1+2"), ("tag", "a"), ("tag", "b")]
        let form = pairs.map { "\(PercentEncoding.encode($0.0))=\(PercentEncoding.encode($0.1))" }.joined(separator: "&")
        let request = Request<HTTPBinEcho<NoJSON>>.post(
            "/post",
            body: .data(Data(form.utf8), contentType: "application/x-www-form-urlencoded")
        )
        let echo = try await bin.client(transport).send(request).body
        #expect(echo.form?["name"]?.values == ["Ada Lovelace"])
        #expect(echo.form?["lang"]?.values == ["en&fr=1+2"])
        #expect(echo.form?["tag"]?.values == ["a", "b"])
    }

    @Test("PUT /put with JSON", arguments: Transports.all)
    func put(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let greeting = Greeting(message: "put", count: 1, tags: [])
        let echo = try await bin.client(transport).send(Request<HTTPBinEcho<Greeting>>.put("/put", body: greeting)).body
        #expect(echo.json == greeting)
    }

    @Test("PATCH /patch with a text body", arguments: Transports.all)
    func patch(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let echo = try await bin.client(transport).send(Request<HTTPBinEcho<NoJSON>>.patch("/patch", body: .text("patched ✓"))).body
        #expect(echo.data == "patched ✓")
        #expect(echo.headers["Content-Type"] == "text/plain; charset=utf-8")
    }

    @Test("DELETE /delete, as a model call and as a call with no result", arguments: Transports.all)
    func delete(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let client = bin.client(transport)
        let echo = try await client.send(Request<HTTPBinEcho<NoJSON>>.delete("/delete", query: [URLQueryItem(name: "id", value: "7")])).body
        #expect(echo.args["id"]?.values == ["7"])
        let plain = try await client.send(Request<Void>.delete("/delete"))
        #expect(plain.status == .ok)
    }

    @Test("PUT with a stream body of unknown length arrives whole", arguments: Transports.all)
    func streamedUpload(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let line = String(repeating: "0123456789abcdef", count: 4096) // 64 KiB
        let request = Request<HTTPBinEcho<NoJSON>>.put("/put", body: .stream(length: nil, contentType: "text/plain") {
            ByteStream(AsyncStream { continuation in
                for _ in 0..<16 { continuation.yield(Data(line.utf8)) }
                continuation.finish()
            })
        })
        let echo = try await bin.client(transport).send(request).body
        #expect(echo.data?.count == 16 * line.utf8.count)
        #expect(echo.data?.hasPrefix("0123456789abcdef") == true)
    }

    @Test("upload from a file streams the file as the body", arguments: Transports.all)
    func fileUpload(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-httpbin-\(UUID().uuidString).txt")
        let text = String(repeating: "line of text\n", count: 10_000)
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let response = try await bin.client(transport).upload(Request<Data>.post("/post"), fromFile: file)
        let echo = try JSONDecoder().decode(HTTPBinEcho<NoJSON>.self, from: response.body)
        #expect(echo.data == text)
        #expect(echo.headers["Content-Length"] == String(text.utf8.count))
    }

    @Test("HEAD /get answers 200 with no body", arguments: Transports.all)
    func head(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let response = try await bin.client(transport).send(Request<Data>.head("/get"))
        #expect(response.status == .ok)
        #expect(response.body.isEmpty)
    }

    @Test("/status/204 answers with an empty body", arguments: Transports.all)
    func noContent(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let response = try await bin.client(transport).send(Request<Data>.get("/status/204"))
        #expect(response.status.code == 204)
        #expect(response.body.isEmpty)
    }

    @Test("/headers sees custom and repeated request header fields", arguments: Transports.all)
    func headers(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        var fields = HTTPFields()
        fields[HTTPField.Name("X-Courier")!] = "yes"
        fields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "a"))
        fields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "b"))
        struct Headers: Decodable { var headers: [String: String] }
        let echo = try await bin.client(transport).send(Request<Headers>.get("/headers", headers: fields)).body
        #expect(echo.headers["X-Courier"] == "yes")
        #expect(listValues(echo.headers["X-Multi"]) == ["a", "b"])
    }
}
