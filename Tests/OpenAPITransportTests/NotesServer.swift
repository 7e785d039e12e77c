import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import TestSupport

/// The notes API of openapi.yaml, served on a loopback port under `/api`: a real HTTP/1.1
/// server (CourierTesting's ``LoopbackServer``) answering through ``NotesResponder``.
struct NotesServer {
    let loopback: LoopbackServer
    let responder: NotesResponder

    static func start() async throws -> NotesServer {
        let responder = NotesResponder()
        return NotesServer(loopback: try await LoopbackServer.start(answering: responder), responder: responder)
    }

    /// The server URL a generated client is made with.
    var serverURL: URL { loopback.url("/api") }

    func shutdown() async { await loopback.shutdown() }
}

/// A request as the notes server received it.
struct ReceivedRequest: Sendable {
    var head: HTTPRequest
    var body: Data?
}

/// Answers the notes operations; records every request.
final class NotesResponder: Transport {
    private let state = LockedBox<(received: [ReceivedRequest], nextID: Int64, failed: Set<Int64>)>(([], 100, []))

    /// Every request so far, in order of arrival.
    var received: [ReceivedRequest] { state.current.received }

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        let data = try await body?.collect(upTo: .max)
        state.withLock { $0.received.append(ReceivedRequest(head: request, body: data)) }
        let target = request.path ?? "/"
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts[0].split(separator: "/").map(String.init)
        let query = URLComponents(string: "/?" + (parts.count > 1 ? parts[1] : "")).flatMap(\.queryItems) ?? []
        let route = path.count > 2 ? path.enumerated().map { $0.offset == 2 ? "{id}" : $0.element }.joined(separator: "/") : path.joined(separator: "/")
        let id = path.count > 2 ? Int64(path[2]) ?? -1 : -1
        switch (request.method, route) {
        case (.get, "api/notes/{id}"):
            return try getNote(id, query: query, headers: request.headerFields)
        case (.post, "api/notes"):
            return try createNote(data ?? Data())
        case (.post, "api/notes/{id}/attachments"):
            return try attachments(id, contentType: request.headerFields[.contentType] ?? "", body: data ?? Data())
        case (.get, "api/notes/{id}/content"):
            return content(size: query.first { $0.name == "size" }?.value.flatMap(Int.init) ?? 0)
        case (.get, "api/slow"):
            // Answers only when the server shuts down: a call to it ends by being cancelled.
            try? await Task.sleep(for: .seconds(3600))
            throw CancellationError()
        default:
            return try json(Problem(title: "no route for \(request.method) \(target)", status: 404), status: 404, problem: true)
        }
    }

    /// Note 302 redirects to note 7; notes 500-599 answer 503 (`Retry-After: 0`) the first time.
    private func getNote(_ id: Int64, query: [URLQueryItem], headers: HTTPFields) throws -> TransportResponse {
        if id == 302 {
            return TransportResponse(head: HTTPResponse(status: .found, headerFields: [.location: "/api/notes/7", .contentLength: "0"]), body: ByteStream(data: Data()))
        }
        if (500..<600).contains(id), state.withLock({ $0.failed.insert(id).inserted }) {
            return try json(Problem(title: "try again", status: 503), status: 503, problem: true, extra: [.retryAfter: "0"])
        }
        guard id > 0 else {
            return try json(Problem(type: "https://courier.test/no-such-note", title: "no such note", status: 404, detail: "note \(id) does not exist"), status: 404, problem: true)
        }
        let note = Note(
            id: id, title: "note \(id)", body: "text", tags: nil,
            requestTag: headers[HTTPField.Name("X-Request-Tag")!],
            fields: query.filter { $0.name == "fields" }.compactMap(\.value),
            q: query.first { $0.name == "q" }?.value
        )
        var response = try json(note, status: 200)
        response.head.headerFields[HTTPField.Name("X-Note-Version")!] = "3"
        return response
    }

    private func createNote(_ data: Data) throws -> TransportResponse {
        let new = try JSONDecoder().decode(NewNote.self, from: data)
        guard !new.title.isEmpty else {
            return try json(Problem(title: "a note needs a title", status: 422), status: 422, problem: true)
        }
        let id = state.withLock { state -> Int64 in
            state.nextID += 1
            return state.nextID
        }
        return try json(Note(id: id, title: new.title, body: new.body, tags: new.tags), status: 201)
    }

    /// Notes 500-599 answer 503 (`Retry-After: 0`) the first time.
    private func attachments(_ id: Int64, contentType: String, body: Data) throws -> TransportResponse {
        if (500..<600).contains(id), state.withLock({ $0.failed.insert(id).inserted }) {
            return try json(Problem(title: "try again", status: 503), status: 503, problem: true, extra: [.retryAfter: "0"])
        }
        let parts = try MultipartReader.parts(of: body, contentType: contentType).map { part in
            Attachment.Part(
                name: part.name, contentType: part.contentType, size: part.body.count,
                text: part.contentType?.hasPrefix("text/") == true ? String(decoding: part.body, as: UTF8.self) : nil
            )
        }
        return try json(Attachment(noteId: id, parts: parts), status: 201)
    }

    /// `size` bytes (byte `i` is `i % 251`), written in 16 KiB chunks.
    private func content(size: Int) -> TransportResponse {
        let sent = LockedBox(0)
        let stream = ByteStream {
            let start = sent.withLock { value -> Int in
                defer { value = min(size, value + 16 * 1024) }
                return value
            }
            guard start < size else { return nil }
            return TestPayload.periodic(modulo251, offset: start, count: min(size, start + 16 * 1024) - start)
        }
        return TransportResponse(
            head: HTTPResponse(status: .ok, headerFields: [.contentType: "application/octet-stream", .contentLength: String(size)]),
            body: stream
        )
    }

    private func json(_ value: some Encodable, status: Int, problem: Bool = false, extra: HTTPFields = [:]) throws -> TransportResponse {
        let data = try JSONEncoder().encode(value)
        var fields: HTTPFields = [
            .contentType: problem ? "application/problem+json" : "application/json",
            .contentLength: String(data.count),
        ]
        fields.append(contentsOf: extra)
        return TransportResponse(head: HTTPResponse(status: HTTPResponse.Status(code: status), headerFields: fields), body: ByteStream(data: data))
    }

    // The server's own view of the schemas (the client uses the generated ones).
    struct NewNote: Codable { var title: String; var body: String; var tags: [String]? }
    struct Note: Codable {
        var id: Int64; var title: String; var body: String; var tags: [String]?
        var requestTag: String?; var fields: [String]?; var q: String?
    }
    struct Problem: Codable { var type: String?; var title: String; var status: Int; var detail: String? }
    struct Attachment: Codable {
        struct Part: Codable { var name: String; var contentType: String?; var size: Int; var text: String? }
        var noteId: Int64
        var parts: [Part]
    }
}

/// Reads a multipart/form-data body: just enough for the tests' forms.
enum MultipartReader {
    struct Part {
        var name: String
        var contentType: String?
        var body: Data
    }

    struct Malformed: Error, CustomStringConvertible { var description: String }

    static func parts(of body: Data, contentType: String) throws -> [Part] {
        guard let boundary = contentType.split(separator: ";").lazy
            .map({ $0.trimmingCharacters(in: .whitespaces) })
            .first(where: { $0.hasPrefix("boundary=") })?
            .dropFirst("boundary=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) else {
            throw Malformed(description: "no boundary in \(contentType)")
        }
        let delimiter = Data("--\(boundary)".utf8)
        let crlf = Data("\r\n".utf8)
        var parts: [Part] = []
        guard var cursor = body.range(of: delimiter)?.upperBound else { throw Malformed(description: "no first boundary") }
        while parts.count < 100 {
            if body[cursor...].starts(with: Data("--".utf8)) { return parts }
            guard body[cursor...].starts(with: crlf) else { throw Malformed(description: "no CRLF after a boundary") }
            cursor += crlf.count
            guard let headEnd = body.range(of: Data("\r\n\r\n".utf8), in: cursor..<body.endIndex),
                  let next = body.range(of: crlf + delimiter, in: headEnd.upperBound..<body.endIndex) else {
                throw Malformed(description: "an unterminated part")
            }
            let headers = String(decoding: body[cursor..<headEnd.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            func header(_ name: String) -> String? {
                headers.first { $0.lowercased().hasPrefix(name + ":") }.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
            }
            let disposition = header("content-disposition") ?? ""
            let name = disposition.split(separator: ";").lazy.map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("name=") }?.dropFirst("name=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) ?? ""
            parts.append(Part(name: name, contentType: header("content-type"), body: Data(body[headEnd.upperBound..<next.lowerBound])))
            cursor = next.upperBound
        }
        throw Malformed(description: "more than 100 parts")
    }
}
