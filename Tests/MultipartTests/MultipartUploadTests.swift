import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import Multipart
import TestSupport
import Testing

/// httpbin's `/post` answer for a multipart body.
struct PostEcho: Decodable {
    var form: [String: String]
    var files: [String: String]
}

/// The process's peak resident set (VmHWM), in bytes, after resetting it where the kernel allows.
enum ResidentMemory {
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    static func peak() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return nil }
        return kilobytes * 1024
    }
}

@Suite(.serialized) struct MultipartUploadTests {
    @Test func httpbinEchoesEveryFieldAndFile() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let notes = directory.appendingPathComponent("notes.txt")
        try Data("first file".utf8).write(to: notes)
        var form = MultipartForm()
        form.append("Quarterly report", name: "title")
        form.append("finance", name: "category")
        try form.append(file: notes, name: "notes")
        form.append(data: Data("second file".utf8), name: "summary", fileName: "summary.txt")

        let httpbin = try await HTTPBinServer.shared()
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(baseURL: httpbin.baseURL, transport: transport)
        let progress = ProgressLog()
        let echo = try await client.send(Request<PostEcho>.post("/post", body: .multipart(form) { progress.append($0) })).body
        #expect(echo.form == ["title": "Quarterly report", "category": "finance"])
        #expect(echo.files == ["notes": "first file", "summary": "second file"])
        #expect(progress.all.last?.fraction == 1)
        try await transport.shutdown()
    }

    @Test func oneGibibyteSparseFileUploadsInConstantMemory() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("sparse.bin")
        let size = 1 << 30
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()

        var form = MultipartForm()
        form.append("big", name: "kind")
        try form.append(file: file, name: "payload")
        let expected = try #require(form.contentLength)

        let server = try await TestHTTPServer.start()
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(configuration: ClientConfiguration(baseURL: server.baseURL, timeout: .seconds(600)), transport: transport)
        ResidentMemory.resetPeak()
        let before = ResidentMemory.peak() ?? 0
        let response = try await client.send(Request<EchoResponse>.post("/upload?crc=off", body: .multipart(form)))
        let peak = ResidentMemory.peak() ?? 0
        #expect(response.body.bodySize == expected)
        print("1 GiB multipart upload: \(expected) bytes; peak resident memory \(peak >> 20) MiB (\(before >> 20) MiB before the upload)")
        // Not a timing check: a body read into memory would need more than 1 GiB here.
        #expect(peak - before < 256 << 20)
        try await transport.shutdown()
        await server.shutdown()
    }
}
