import Foundation
import NIOCore

extension Routes {
    /// The echo, with `?status=` and `?response-header=Name:value` applied.
    static func echo(_ request: ServerRequest, _ writer: ResponseWriter) async throws {
        let status = request.queryValue("status").flatMap(Int.init) ?? 200
        let headers = request.query.filter { $0.name == "response-header" }.compactMap { item -> HeaderField? in
            guard let value = item.value, let colon = value.firstIndex(of: ":") else { return nil }
            return HeaderField(name: String(value[..<colon]), value: String(value[value.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        try await writer.respondJSON(EchoResponse(request), status: status, headers: headers)
    }

    /// `count` payload bytes, streamed in 64 KiB writes so memory stays flat.
    static func bytes(_ count: Int, chunked: Bool, writer: ResponseWriter) async throws {
        let framing = chunked
            ? HeaderField(name: "Transfer-Encoding", value: "chunked")
            : HeaderField(name: "Content-Length", value: String(count))
        try await writer.writeHead(status: 200, headers: [HeaderField(name: "Content-Type", value: "application/octet-stream"), framing])
        var offset = 0
        while offset < count {
            let length = min(64 * 1024, count - offset)
            try await writer.writeBody(ByteBuffer(bytes: TestPayload.bytes(offset: offset, count: length)))
            offset += length
        }
        try await writer.finish()
    }

    /// `count` chunks of `size` payload bytes, `delay` ms apart.
    static func chunked(_ request: ServerRequest, _ writer: ResponseWriter) async throws {
        let count = request.queryValue("count").flatMap(Int.init) ?? 5
        let size = request.queryValue("size").flatMap(Int.init) ?? 100
        let delay = request.queryValue("delay").flatMap(Int.init) ?? 0
        try await writer.writeHead(status: 200, headers: [
            HeaderField(name: "Content-Type", value: "application/octet-stream"),
            HeaderField(name: "Transfer-Encoding", value: "chunked"),
        ])
        for index in 0..<count {
            if index > 0, delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
            try await writer.writeBody(ByteBuffer(bytes: TestPayload.bytes(offset: index * size, count: size)))
        }
        try await writer.finish()
    }

    /// Promises `2 * count` bytes, sends `count`, then waits (a hang guard's while) without sending.
    static func stall(_ count: Int, writer: ResponseWriter) async throws {
        try await writer.writeHead(status: 200, headers: [HeaderField(name: "Content-Length", value: String(2 * count))])
        try await writer.writeBody(ByteBuffer(bytes: TestPayload.bytes(offset: 0, count: count)))
        try await Task.sleep(for: .hangGuard)
        writer.closeConnection()
    }

    /// Promises `2 * count` bytes, sends `count`, then closes the connection.
    static func drop(_ count: Int, writer: ResponseWriter) async throws {
        writer.closeConnection()
        try await writer.writeHead(status: 200, headers: [HeaderField(name: "Content-Length", value: String(2 * count))])
        try await writer.writeBody(ByteBuffer(bytes: TestPayload.bytes(offset: 0, count: count)))
    }

    /// Bytes that are not an HTTP response, then the connection closes.
    static func garbage(_ request: ServerRequest, _ writer: ResponseWriter) async throws {
        writer.closeConnection()
        try await writer.writeRaw(ByteBuffer(string: "SSH-2.0-NotHTTP \u{1}\u{2}\u{3} this is not an HTTP response\r\n\r\n"))
    }

    /// The gzip fixture, encoded.
    static func gzip(_ request: ServerRequest, _ writer: ResponseWriter) async throws {
        try await writer.respond(status: 200, headers: [
            HeaderField(name: "Content-Type", value: "application/json"),
            HeaderField(name: "Content-Encoding", value: "gzip"),
        ], body: GzipFixture.compressed)
    }

    /// One hop of a chain of `count` redirects that ends at `/echo`.
    static func redirectChain(_ count: Int, absolute: Bool, request: ServerRequest, writer: ResponseWriter) async throws {
        let status = request.queryValue("status").flatMap(Int.init) ?? 302
        let name = absolute ? "absolute-redirect" : "redirect"
        var next = count > 1 ? "/\(name)/\(count - 1)?status=\(status)" : "/echo"
        if absolute, let host = request.values(of: "host").first { next = "http://\(host)\(next)" }
        try await writer.respond(status: status, headers: [HeaderField(name: "Location", value: next)])
    }

    /// One redirect to `?url=`, with `?status=` (302 by default).
    static func redirectTo(_ request: ServerRequest, _ writer: ResponseWriter) async throws {
        guard let url = request.queryValue("url") else {
            try await writer.respond(status: 400, body: Data("missing url".utf8))
            return
        }
        let status = request.queryValue("status").flatMap(Int.init) ?? 302
        try await writer.respond(status: status, headers: [HeaderField(name: "Location", value: url)])
    }
}
