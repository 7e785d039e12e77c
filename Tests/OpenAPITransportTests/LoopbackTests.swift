import Foundation
import HTTPCore
import HTTPTypes
import OpenAPIRuntime
import OpenAPITransport
import Reachability
import Testing
import TestSupport

/// A generated client over ``APIClientTransport`` against the notes server on loopback, over
/// each Courier transport.
@Suite("OpenAPITransport: a generated client on loopback")
struct LoopbackTests {
    @Test("path, query and header parameters arrive as generated; plugins see the operation id and scopes", arguments: Wire.allCases)
    func parameters(_ wire: Wire) async throws {
        try await withNotesServer { server in
            let plugin = RecordingPlugin(scope: "notes")
            let api = makeAPIClient(wire, baseURL: URL(string: "http://unused.invalid")!) {
                $0.defaultHeaders[.userAgent] = "courier-openapi-tests"
                $0.plugins = [plugin]
            }
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: api, scopes: ["notes"]))

            let output = try await client.getNote(
                path: .init(noteId: 42),
                query: .init(fields: ["title", "body"], q: "a&b=c ü/?"),
                headers: .init(xRequestTag: "tag-1")
            )
            let ok = try output.ok
            #expect(ok.headers.xNoteVersion == 3)
            let note = try ok.body.json
            #expect(note.id == 42)
            #expect(note.requestTag == "tag-1")
            #expect(note.fields == ["title", "body"])
            #expect(note.q == "a&b=c ü/?")

            let received = try #require(server.responder.received.last)
            #expect(received.head.path?.hasPrefix("/api/notes/42?fields=title&fields=body&q=") == true)
            #expect(received.head.headerFields[.userAgent] == "courier-openapi-tests", "the client's default headers are added")
            #expect(received.head.headerFields[HTTPField.Name("X-Prepared-By")!] == "recording-plugin", "plugins prepare the request")
            #expect(received.head.headerFields[.accept] == "application/json, application/problem+json", "the generated Accept is kept")
            let seen = try #require(plugin.calls.last)
            #expect(seen.name == "getNote")
            #expect(seen.scopes == ["notes"])
            #expect(seen.status == 200)
        }
    }

    @Test("a documented error response (404, problem+json) is the generated output case, not a thrown error", arguments: Wire.allCases)
    func documentedError(_ wire: Wire) async throws {
        try await withNotesServer { server in
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: makeAPIClient(wire, baseURL: server.serverURL)))
            let output = try await client.getNote(path: .init(noteId: -1))
            guard case .notFound(let notFound) = output else {
                Issue.record("expected .notFound, got \(output)")
                return
            }
            let problem = try notFound.body.applicationProblemJson
            #expect(problem.status == 404)
            #expect(problem.title == "no such note")
            #expect(problem.detail == "note -1 does not exist")
        }
    }

    @Test("with validation .successful a non-2xx throws Courier's NetworkError, with the response", arguments: Wire.allCases)
    func errorMapping(_ wire: Wire) async throws {
        try await withNotesServer { server in
            let transport = APIClientTransport(client: makeAPIClient(wire, baseURL: server.serverURL), validation: .successful)
            let client = makeClient(server.serverURL, transport: transport)
            let error = await clientError { try await client.getNote(path: .init(noteId: -5)) }
            guard case .notFound(let response) = error?.networkError else {
                Issue.record("expected NetworkError.notFound, got \(String(describing: error))")
                return
            }
            #expect(error?.operationID == "getNote")
            #expect(String(decoding: response.body, as: UTF8.self).contains("note -5 does not exist"))
        }
    }

    @Test("a JSON body goes out with its length; 201 and a documented 422 come back typed", arguments: Wire.allCases)
    func jsonBody(_ wire: Wire) async throws {
        try await withNotesServer { server in
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: makeAPIClient(wire, baseURL: server.serverURL)))
            let created = try await client.createNote(body: .json(.init(title: "Groceries", body: "milk, \"eggs\"", tags: ["home"]))).created.body.json
            #expect(created.title == "Groceries")
            #expect(created.body == "milk, \"eggs\"")
            #expect(created.tags == ["home"])
            let received = try #require(server.responder.received.last)
            #expect(received.head.method == .post)
            #expect(received.head.headerFields[.contentType] == "application/json; charset=utf-8")
            #expect(received.head.headerFields[.contentLength] == String(received.body?.count ?? -1))

            let refused = try await client.createNote(body: .json(.init(title: "", body: "x")))
            #expect(try refused.unprocessableContent.body.applicationProblemJson.title == "a note needs a title")
        }
    }

    @Test("a multipart body: a text part and a file part, from an array and streamed from a single-pass sequence", arguments: Wire.allCases)
    func multipart(_ wire: Wire) async throws {
        try await withNotesServer { server in
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: makeAPIClient(wire, baseURL: server.serverURL)))
            let file = contentPattern(200_000)

            let fromArray = try await client.uploadAttachment(path: .init(noteId: 9), body: .multipartForm([
                .caption(.init(payload: .init(body: HTTPBody("a caption")))),
                .file(.init(payload: .init(body: HTTPBody(file)), filename: "data.bin")),
            ])).created.body.json
            #expect(fromArray.noteId == 9)
            #expect(fromArray.parts.map(\.name) == ["caption", "file"])
            #expect(fromArray.parts.first?.text == "a caption")
            #expect(fromArray.parts.last?.size == file.count)
            #expect(fromArray.parts.last?.contentType == "application/octet-stream")

            let parts = AsyncStream<Operations.UploadAttachment.Input.Body.MultipartFormPayload> { continuation in
                continuation.yield(.caption(.init(payload: .init(body: HTTPBody("streamed")))))
                continuation.yield(.file(.init(payload: .init(body: streamedBody(file)), filename: "stream.bin")))
                continuation.finish()
            }
            let streamed = try await client.uploadAttachment(
                path: .init(noteId: 10),
                body: .multipartForm(MultipartBody(parts))
            ).created.body.json
            #expect(streamed.parts.map(\.name) == ["caption", "file"])
            #expect(streamed.parts.first?.text == "streamed")
            #expect(streamed.parts.last?.size == file.count)
            let received = try #require(server.responder.received.last)
            if wire == .asyncHTTPClient {
                // URLSessionTransport sends a stream body of unknown length from memory, with a length.
                #expect(received.head.headerFields[.contentLength] == nil, "a body of unknown length is sent chunked")
            }
            #expect(received.head.headerFields[.contentType]?.hasPrefix("multipart/form-data; boundary=") == true)
        }
    }

    @Test("a binary response streams into the HTTPBody the generated client returns", arguments: Wire.allCases)
    func streamedResponse(_ wire: Wire) async throws {
        try await withNotesServer { server in
            // 3 MiB in 16 KiB chunks from a server whose connection is tasks on the cooperative
            // pool, which the suites' start shares with ~700 tests: beside a busy loop the body
            // was still arriving at a 30 s deadline. A timeout is not what this test checks.
            let api = makeAPIClient(wire, baseURL: server.serverURL) { $0.timeout = .hangGuard }
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: api))
            let size = 3 * 1024 * 1024 + 17
            let body = try await client.downloadContent(path: .init(noteId: 1), query: .init(size: size)).ok.body.binary
            #expect(body.length == .known(Int64(size)))
            var received = Data()
            var chunks = 0
            for try await chunk in body {
                received.append(contentsOf: chunk)
                chunks += 1
            }
            #expect(received == contentPattern(size))
            #expect(chunks > 1, "the body arrived in pieces, not as one buffer")
        }
    }

    @Test("cancelling the calling task cancels the call: NetworkError.cancelled", arguments: Wire.allCases)
    func cancellation(_ wire: Wire) async throws {
        try await withNotesServer { server in
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: makeAPIClient(wire, baseURL: server.serverURL)))
            let call = Task { try await client.waitForever() }
            #expect(await eventually { server.responder.received.contains { $0.head.path == "/api/slow" } })
            call.cancel()
            let result = await call.result
            guard case .failure(let error) = result, let clientError = error as? ClientError else {
                Issue.record("expected a ClientError, got \(result)")
                return
            }
            guard case .cancelled = clientError.networkError else {
                Issue.record("expected NetworkError.cancelled, got \(clientError.underlyingError)")
                return
            }
            #expect(clientError.operationID == "waitForever")
        }
    }

    @Test("the client's retry policy and redirects apply to generated calls", arguments: Wire.allCases)
    func retriesAndRedirects(_ wire: Wire) async throws {
        try await withNotesServer { server in
            let api = makeAPIClient(wire, baseURL: server.serverURL) {
                $0.retryPolicy = .exponential(maxAttempts: 3, backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(20)))
            }
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: api))
            let retried = try await client.getNote(path: .init(noteId: 503)).ok.body.json
            #expect(retried.id == 503)
            #expect(server.responder.received.filter { $0.head.path == "/api/notes/503" }.count == 2, "a 503, then the answer")

            let redirected = try await client.getNote(path: .init(noteId: 302)).ok.body.json
            #expect(redirected.id == 7, "the 302 was followed")
        }
    }

    @Test("a retried POST sends a multi-pass body again; a single-pass body fails the second attempt with invalidRequest")
    func retriedBodies() async throws {
        try await withNotesServer { server in
            let api = makeAPIClient(.asyncHTTPClient, baseURL: server.serverURL) {
                var policy = RetryPolicy.exponential(maxAttempts: 3, backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(20)))
                policy.retryableMethods.insert(.post)
                $0.retryPolicy = policy
            }
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: api))
            let file = contentPattern(50_000)
            let again = try await client.uploadAttachment(path: .init(noteId: 501), body: .multipartForm([
                .file(.init(payload: .init(body: HTTPBody(file)), filename: "a.bin")),
            ])).created.body.json
            #expect(again.parts.last?.size == file.count)
            #expect(server.responder.received.filter { $0.head.path == "/api/notes/501/attachments" }.count == 2)

            let once = AsyncStream<Operations.UploadAttachment.Input.Body.MultipartFormPayload> { continuation in
                continuation.yield(.file(.init(payload: .init(body: HTTPBody(file)), filename: "b.bin")))
                continuation.finish()
            }
            let error = await clientError { try await client.uploadAttachment(path: .init(noteId: 502), body: .multipartForm(MultipartBody(once))) }
            guard case .invalidRequest(let reason) = error?.networkError else {
                Issue.record("expected NetworkError.invalidRequest, got \(String(describing: error))")
                return
            }
            #expect("\(reason)".contains("can be sent only once"), "\(reason)")
            #expect(server.responder.received.filter { $0.head.path == "/api/notes/502/attachments" }.count == 1, "not retried again")
        }
    }

    @Test("interceptors wrap generated calls; a reachability pre-flight plugin refuses them while offline")
    func interceptorsAndReachability() async throws {
        try await withNotesServer { server in
            let monitor = ManualMonitor(.online(interface: "eth0", family: .ipv4))
            let api = makeAPIClient(.asyncHTTPClient, baseURL: server.serverURL) {
                $0.plugins = [ReachabilityPlugin(monitor: monitor)]
                $0.interceptors = [TaggingInterceptor()]
            }
            let client = makeClient(server.serverURL, transport: APIClientTransport(client: api))
            let online = try await client.getNote(path: .init(noteId: 1)).ok.body.json
            #expect(online.id == 1)
            #expect(server.responder.received.last?.head.headerFields[HTTPField.Name("X-Intercepted")!] == "getNote")

            monitor.status = .offline(.noLink)
            let error = await clientError { try await client.getNote(path: .init(noteId: 2)) }
            guard case .offline = error?.networkError else {
                Issue.record("expected NetworkError.offline, got \(String(describing: error))")
                return
            }
            #expect(server.responder.received.count == 1, "nothing was sent while offline")
        }
    }

    @Test("a server URL that is not http(s) is refused before anything is sent")
    func badServerURL() async throws {
        try await withNotesServer { server in
            let client = makeClient(URL(string: "ftp://127.0.0.1/api")!, transport: APIClientTransport(client: makeAPIClient(.asyncHTTPClient, baseURL: server.serverURL)))
            let error = await clientError { try await client.getNote(path: .init(noteId: 1)) }
            guard case .invalidRequest = error?.networkError else {
                Issue.record("expected NetworkError.invalidRequest, got \(String(describing: error))")
                return
            }
            #expect(server.responder.received.isEmpty)
        }
    }
}

/// Marks each request with the name of the call it belongs to.
private struct TaggingInterceptor: Interceptor {
    func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        var request = request
        request.headers[HTTPField.Name("X-Intercepted")!] = context.endpointName
        return try await next(request)
    }
}
