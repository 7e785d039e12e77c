public import Foundation
import NIOConcurrencyHelpers

/// Routes of a server that assigns ids, for offline work in steps: `POST /notes` answers 201
/// with `{"id": N}` and `Location: /notes/N`, N counting from 100; `/notes/100`,
/// `/notes/100/attachments` and `/notes/100/tags` answer 200. What it processed is logged in
/// order, and the bodies of the note and its attachments are kept.
public final class NotesServer: Sendable {
    private let log = NIOLockedValueBox<[String]>([])
    private let next = NIOLockedValueBox(100)

    /// `METHOD path` of each request processed, in order (`POST /notes -> 100` for a create).
    public var processed: [String] { log.withLockedValue { $0 } }

    public init(_ server: TestHTTPServer) {
        server.keepBodies(of: "/notes/100")
        server.keepBodies(of: "/notes/100/attachments")
        server.route("/notes") { [log, next] request, writer in
            let id = next.withLockedValue { value -> Int in
                defer { value += 1 }
                return value
            }
            log.withLockedValue { $0.append("\(request.method) /notes -> \(id)") }
            try await writer.respond(
                status: 201, headers: [HeaderField(name: "Location", value: "/notes/\(id)"), HeaderField(name: "Content-Type", value: "application/json")],
                body: Data("{\"id\":\(id)}".utf8)
            )
        }
        for path in ["/notes/100", "/notes/100/attachments", "/notes/100/tags"] {
            server.route(path) { [log] request, writer in
                log.withLockedValue { $0.append("\(request.method) \(path)") }
                try await writer.respond(status: 200)
            }
        }
    }

    /// What the scenario's steps leave when each arrived once, in order.
    public static let inOrder = ["POST /notes -> 100", "PATCH /notes/100", "POST /notes/100/attachments", "POST /notes/100/tags"]

    /// A multipart body of a photo's size (larger than a queue's inline limit: stored apart
    /// and streamed at the send).
    public static func attachment() -> Data {
        var data = Data("--b0undary\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"p.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
        data.append(Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }))
        data.append(Data("\r\n--b0undary--\r\n".utf8))
        return data
    }
}
