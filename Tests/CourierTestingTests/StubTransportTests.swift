import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing

private enum NotesAPI: Endpoint {
    case note(id: Int)

    var path: String {
        switch self {
        case .note(let id): "/notes/\(id)"
        }
    }
    var method: HTTPRequest.Method { .get }
}

private struct Note: Codable, Equatable {
    var id: Int
    var text: String
}

@Suite("StubTransport")
struct StubTransportTests {
    private func client(_ stub: StubTransport) -> APIClient {
        APIClient(baseURL: URL(string: "https://api.test/v1")!, transport: stub)
    }

    @Test("an endpoint's route answers its model, and the request is recorded under the base path")
    func endpointRoute() async throws {
        let stub = StubTransport()
        stub.on(NotesAPI.note(id: 3), respond: try .json(Note(id: 3, text: "milk")))
        let note: Note = try await client(stub).model(NotesAPI.note(id: 3))
        #expect(note == Note(id: 3, text: "milk"))
        #expect(stub.recordedRequests.map(\.head.path) == ["/v1/notes/3"])
        #expect(stub.recordedRequests.first?.head.authority == "api.test")
    }

    @Test("several stubs answer in turn, the last repeats; other paths get the fallback")
    func stubsInTurn() async throws {
        let stub = StubTransport(fallback: .status(410))
        stub.on(.get, "/flaky", respond: .status(503), .status(200))
        var statuses: [Int] = []
        for path in ["/flaky", "/flaky", "/flaky", "/gone"] {
            let response = try await stub.send(HTTPRequest(method: .get, scheme: "https", authority: "api.test", path: path), body: nil, timeout: nil)
            statuses.append(response.head.status.code)
        }
        #expect(statuses == [503, 200, 200, 410])
        #expect(stub.recordedRequests.count == 4)
    }

    @Test("a responder sees the request, body included; the query does not take part in matching")
    func responder() async throws {
        let stub = StubTransport()
        stub.on(.post, "/echo") { request in
            .json(#"{"bytes":\#(request.body?.count ?? -1),"trace":"\#(request.head.headerFields[HTTPField.Name("X-Trace")!] ?? "")"}"#)
        }
        var request = HTTPRequest(method: .post, scheme: "https", authority: "api.test", path: "/echo?verbose=1")
        request.headerFields[HTTPField.Name("X-Trace")!] = "t-1"
        let response = try await stub.send(request, body: .data(Data("hello".utf8)), timeout: nil)
        let text = String(decoding: try await response.body.collect(upTo: 1024), as: UTF8.self)
        #expect(text == #"{"bytes":5,"trace":"t-1"}"#)
        #expect(response.head.headerFields[.contentLength] == String(text.utf8.count))
        #expect(stub.recordedRequests.first?.body == Data("hello".utf8))
    }

    @Test("a failure stub throws its error; a delayed answer ends in cancelled when its task is cancelled")
    func failureAndDelay() async throws {
        let stub = StubTransport()
        stub.on(.get, "/down", respond: .failure(.transport(TransportFailure(.notConnected, "no route"))))
        stub.on(.get, "/slow", respond: StubTransport.Stub(delay: .seconds(60)))
        let head = { (path: String) in HTTPRequest(method: .get, scheme: "https", authority: "api.test", path: path) }
        do {
            _ = try await stub.send(head("/down"), body: nil, timeout: nil)
            Issue.record("the failure stub answered")
        } catch NetworkError.transport(let failure) {
            #expect(failure.kind == .notConnected)
        }
        let slow = Task { try await stub.send(head("/slow"), body: nil, timeout: nil) }
        slow.cancel()
        do {
            _ = try await slow.value
            Issue.record("the delayed stub answered")
        } catch NetworkError.cancelled {
        }
    }
}
