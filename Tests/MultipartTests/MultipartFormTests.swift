import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Multipart
import Testing

/// Reads a whole body produced for a request.
func collect(_ body: RequestBody?) async throws -> Data {
    try await body?.collect(upTo: .max) ?? Data()
}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-mp-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Applies `content` the way the client does and returns the draft.
func draft(_ content: RequestContent) throws -> RequestDraft {
    var draft = RequestDraft(method: .post, url: URL(string: "https://upload.test/")!)
    try content.apply(to: &draft, context: EncodingContext(jsonEncoder: JSONEncoder()))
    return draft
}

@Suite struct MultipartFormTests {
    @Test func bodyIsExactlyRFC7578() async throws {
        var form = MultipartForm(boundary: "XyZ")
        form.append("Ada", name: "author")
        form.append(data: Data("hello".utf8), name: "note", fileName: "note.txt")
        let request = try draft(.multipart(form))
        let body = try await collect(request.body)
        let expected = "--XyZ\r\nContent-Disposition: form-data; name=\"author\"\r\n\r\nAda\r\n"
            + "--XyZ\r\nContent-Disposition: form-data; name=\"note\"; filename=\"note.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n"
            + "--XyZ--\r\n"
        #expect(String(decoding: body, as: UTF8.self) == expected)
        #expect(request.body?.length == body.count)
        #expect(request.headers[.contentType] == "multipart/form-data; boundary=XyZ")
    }

    @Test func namesAreEscapedAndNonASCIIFileNamesPercentEncoded() async throws {
        var form = MultipartForm(boundary: "b")
        form.append(data: Data("x".utf8), name: "we\"ird\r\nname", fileName: "résumé \"final\".pdf")
        let text = String(decoding: try await collect(draft(.multipart(form)).body), as: UTF8.self)
        #expect(text.contains(#"name="we%22ird%0D%0Aname"; filename="r%C3%A9sum%C3%A9 %22final%22.pdf""#))
        #expect(text.contains("Content-Type: application/pdf"))

        var utf8 = MultipartForm(boundary: "b", fileNameEncoding: .utf8)
        utf8.append(data: Data("x".utf8), name: "f", fileName: "résumé.pdf")
        #expect(String(decoding: try await collect(draft(.multipart(utf8)).body), as: UTF8.self).contains(#"filename="résumé.pdf""#))
    }

    @Test func boundaryNeverOccursInInMemoryParts() {
        var form = MultipartForm(boundary: "collide")
        form.append("text with collide inside", name: "a")
        #expect(form.boundary != "collide")
        #expect(form.boundary.hasPrefix("courier-"))
    }

    @Test func randomBoundariesDiffer() {
        #expect(MultipartForm().boundary != MultipartForm().boundary)
    }

    @Test func contentTypeIsInferredFromTheExtension() {
        #expect(MediaTypes.contentType(forFileName: "photo.JPG") == "image/jpeg")
        #expect(MediaTypes.contentType(forFileName: "data.json") == "application/json")
        #expect(MediaTypes.contentType(forFileName: "archive.unknownext") == "application/octet-stream")
        #expect(MediaTypes.contentType(forFileName: "noextension") == "application/octet-stream")
    }

    @Test func unknownStreamLengthSendsChunked() async throws {
        var form = MultipartForm(boundary: "s")
        form.append(stream: { ByteStream(data: Data("streamed".utf8)) }, length: nil, name: "live", fileName: "live.bin")
        let request = try draft(.multipart(form))
        #expect(request.body?.length == nil)
        let text = String(decoding: try await collect(request.body), as: UTF8.self)
        #expect(text.contains("Content-Type: application/octet-stream\r\n\r\nstreamed\r\n--s--\r\n"))
    }

    @Test func streamThatBreaksItsDeclaredLengthIsAnError() async throws {
        var form = MultipartForm(boundary: "s")
        form.append(stream: { ByteStream(data: Data("12345".utf8)) }, length: 3, name: "liar")
        await #expect(throws: NetworkError.self) { _ = try await collect(draft(.multipart(form)).body) }
    }

    @Test func progressCountsUpToTheTotal() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("big.bin")
        try Data(count: 300_000).write(to: file)
        var form = MultipartForm()
        form.append("x", name: "field")
        try form.append(file: file, name: "upload")
        let seen = ProgressLog()
        let request = try draft(.multipart(form, chunkSize: 64 * 1024) { seen.append($0) })
        let body = try await collect(request.body)
        let reports = seen.all
        #expect(reports.count >= 5)
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.bytesSent < $1.bytesSent })
        #expect(reports.last == UploadProgress(bytesSent: body.count, totalBytes: body.count))
        #expect(form.contentLength == body.count)
    }

    @Test func missingFileFailsWhenAppendedAndWhenSent() async throws {
        var form = MultipartForm()
        #expect(throws: NetworkError.self) { try form.append(file: URL(fileURLWithPath: "/nonexistent/a.png"), name: "a") }

        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("gone.txt")
        try Data("soon gone".utf8).write(to: file)
        try form.append(file: file, name: "gone")
        try FileManager.default.removeItem(at: file)
        let stub = StubTransport(fallback: .status(200))
        let client = APIClient(baseURL: URL(string: "https://upload.test")!, transport: stub)
        await #expect {
            try await client.send(Request<Void>.post("/upload", body: .multipart(form)))
        } throws: { error in
            if case NetworkError.invalidRequest(.unreadableFile) = error { return true }
            return false
        }
        #expect(stub.recordedRequests.isEmpty)
    }

    @Test func fileThatChangesSizeDuringTheUploadIsAnError() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("growing.log")
        try Data(count: 1000).write(to: file)
        var form = MultipartForm()
        try form.append(file: file, name: "log")
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(count: 10))
        try handle.close()
        await #expect {
            _ = try await collect(draft(.multipart(form)).body)
        } throws: { error in
            guard case NetworkError.invalidRequest(.unreadableFile(_, let reason)) = error else { return false }
            return reason.contains("changed size")
        }

        try Data(count: 10).write(to: file)
        await #expect(throws: NetworkError.self) { _ = try await collect(draft(.multipart(form)).body) }
    }

    @Test func textOnlyFormsFallBackToURLEncoding() async throws {
        var form = MultipartForm()
        form.append("Ada Lovelace", name: "name")
        form.append("a&b=c", name: "q")
        let request = try draft(.form(form))
        #expect(request.headers[.contentType] == "application/x-www-form-urlencoded")
        #expect(String(decoding: try await collect(request.body), as: UTF8.self) == "name=Ada%20Lovelace&q=a%26b%3Dc")
        form.append(data: Data(), name: "file", fileName: "empty.txt")
        #expect(try draft(.form(form)).headers[.contentType]?.hasPrefix("multipart/form-data") == true)
    }
}

final class ProgressLog: Sendable {
    private let values = LockedBox<[UploadProgress]>([])
    func append(_ value: UploadProgress) { values.withLock { $0.append(value) } }
    var all: [UploadProgress] { values.current }
}

@Test func encodableValuesBecomeFieldsInTheEncodingModulesStyles() async throws {
    struct Address: Encodable { var city: String }
    struct Profile: Encodable { var name: String; var nickname: String?; var tags: [String]; var address: Address; var active: Bool }
    var form = MultipartForm(boundary: "f")
    try form.append(fields: Profile(name: "Ada", nickname: nil, tags: ["x", "y"], address: Address(city: "London"), active: true))
    #expect(form.parts.map(\.name) == ["active", "address[city]", "name", "tags[]", "tags[]"])
    let values = form.parts.map { part -> String in
        guard case .data(let data) = part.source else { return "?" }
        return String(decoding: data, as: UTF8.self)
    }
    #expect(values == ["1", "London", "Ada", "x", "y"])

    struct Bad: Encodable { var reading: Double }
    #expect(throws: NetworkError.self) { try form.append(fields: Bad(reading: .infinity)) }
}
