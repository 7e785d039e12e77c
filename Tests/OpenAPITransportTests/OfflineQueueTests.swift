import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import HTTPTypes
import InMemoryTracing
import OfflineQueue
import OpenAPIOfflineQueue
import OpenAPIRuntime
import OpenAPITransport
import Reachability
import Testing
import TestSupport
import Tracing

/// Generated operations sent through the offline queue (send-or-store) with
/// ``OfflineQueueTransport``.
@Suite("OpenAPIOfflineQueue: generated operations through the offline queue", .serialized)
struct OfflineQueueTests {
    /// A queue in a fresh folder whose client points at `server`, watching `monitor`.
    private struct Setup {
        let folder: URL
        let queue: OfflineQueue
        let client: Client
        let plugin: RecordingPlugin

        init(
            _ server: NotesServer, monitor: ManualMonitor, transport: (any Transport)? = nil, operations: Set<String> = ["createNote", "uploadAttachment"],
            tracer: (any Tracer)? = nil
        ) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-openapi-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let plugin = RecordingPlugin(scope: "notes")
            var configuration = ClientConfiguration(baseURL: server.serverURL, timeout: .hangGuard)
            configuration.plugins = [plugin]
            let api = APIClient(configuration: configuration, transport: transport ?? sharedAsyncHTTPClient)
            var queueConfiguration = QueueConfiguration(path: folder.appendingPathComponent("queue.db").path, durability: .normal)
            queueConfiguration.tracing.tracer = tracer
            queue = try OfflineQueue(configuration: queueConfiguration, client: api, monitor: monitor)
            let transport = OfflineQueueTransport(
                queue: queue, operations: operations, others: APIClientTransport(client: api, scopes: ["notes"]),
                options: { EnqueueOptions(group: $0) }
            )
            client = Client(serverURL: server.serverURL, transport: transport)
            self.plugin = plugin
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    @Test("offline: the call throws OperationQueued with the ticket; back online, a drain delivers it")
    func queuedThenReplayed() async throws {
        try await withNotesServer { server in
            let monitor = ManualMonitor(.offline(.noLink))
            let setup = try Setup(server, monitor: monitor)
            defer { setup.remove() }

            // A queued call must not look like a success: it throws.
            let queued = await clientError { try await setup.client.createNote(body: .json(.init(title: "offline note", body: "written on a plane"))) }?.queued
            let ticket = try #require(queued).ticket
            #expect(queued?.operationID == "createNote")
            #expect(server.responder.received.isEmpty, "nothing reached the server")

            let entry = try #require(try await setup.queue.entry(ticket.id))
            #expect(entry.name == "createNote", "the entry is keyed by the operation id")
            #expect(entry.group == "createNote")
            #expect(entry.scopes == ["notes"])
            #expect(entry.method == "POST")
            #expect(entry.url == server.serverURL.absoluteString + "/notes")
            #expect(entry.state == .pending)

            #expect(try await setup.queue.drain().offline, "a drain while offline sends nothing")
            #expect(server.responder.received.isEmpty)

            monitor.status = .online(interface: "eth0", family: .ipv4)
            let summary = try await setup.queue.drain()
            #expect(summary.delivered == 1)
            let received = try #require(server.responder.received.last)
            #expect(received.head.path == "/api/notes")
            #expect(received.head.headerFields[HTTPField.Name("Idempotency-Key")!] == ticket.idempotencyKey)
            #expect(received.head.headerFields[HTTPField.Name("X-Prepared-By")!] == "recording-plugin", "scoped plugins run again at replay")
            #expect(received.head.headerFields[.contentType] == "application/json; charset=utf-8")
            let sent = try JSONDecoder().decode(NotesResponder.NewNote.self, from: try #require(received.body))
            #expect(sent.title == "offline note")
            #expect(sent.body == "written on a plane")
            #expect(try await setup.queue.entry(ticket.id)?.state == .delivered)
        }
    }

    @Test("an operation queued inside a span keeps that trace: the replayed request carries a traceparent of the same trace")
    func queuedInATrace() async throws {
        try await withNotesServer { server in
            let monitor = ManualMonitor(.offline(.noLink))
            let tracer = W3CTestTracer()
            let setup = try Setup(server, monitor: monitor, tracer: tracer)
            defer { setup.remove() }
            let (traceID, queued) = await tracer.withSpan("save note") { span in
                (span.context.inMemorySpanContext?.traceID, await clientError { try await setup.client.createNote(body: .json(.init(title: "t", body: "b"))) }?.queued)
            }
            let ticket = try #require(queued).ticket
            #expect(try await setup.queue.entry(ticket.id)?.traceContext?.traceID == traceID)
            monitor.status = .online(interface: "eth0", family: .ipv4)
            #expect(try await setup.queue.drain().delivered == 1)
            let traceparent = try #require(server.responder.received.last?.head.headerFields[HTTPField.Name("traceparent")!])
            #expect(traceparent.split(separator: "-").dropFirst().first.map(String.init) == traceID)
        }
    }

    @Test("online: a queued operation is sent now and its output (2xx or documented error) is returned")
    func onlineSendsNow() async throws {
        try await withNotesServer { server in
            let setup = try Setup(server, monitor: ManualMonitor(.online(interface: "eth0", family: .ipv4)))
            defer { setup.remove() }

            let outcome = try await OperationOutcome.of { try await setup.client.createNote(body: .json(.init(title: "now", body: "b"))) }
            guard case .sent(let output) = outcome else {
                Issue.record("expected .sent, got \(outcome)")
                return
            }
            #expect(try output.created.body.json.title == "now")
            let refused = try await setup.client.createNote(body: .json(.init(title: "", body: "b")))
            #expect(try refused.unprocessableContent.body.applicationProblemJson.status == 422)
            #expect(try await setup.queue.counts().pending == 0, "nothing was stored")
            #expect(setup.plugin.calls.map(\.name) == ["createNote", "createNote"])
        }
    }

    @Test("an operation not named for the queue goes straight through, and fails as usual when offline")
    func otherOperations() async throws {
        try await withNotesServer { server in
            let gone = LockedBox(false)
            let setup = try Setup(server, monitor: ManualMonitor(.online(interface: "eth0", family: .ipv4)), transport: NetworkSwitch(gone: gone))
            defer { setup.remove() }
            #expect(try await setup.client.getNote(path: .init(noteId: 3)).ok.body.json.id == 3)
            gone.withLock { $0 = true }
            let error = await clientError { try await setup.client.getNote(path: .init(noteId: 3)) }
            #expect(error != nil && error?.queued == nil)
            #expect(error?.networkError?.isConnectivityFailure == true)
            #expect(try await setup.queue.counts().pending == 0)
        }
    }

    @Test("a send that finds the network gone stores the call; a single-pass multipart body is kept whole and replayed")
    func networkGoneDuringSend() async throws {
        try await withNotesServer { server in
            let gone = LockedBox(true)
            let monitor = ManualMonitor(.online(interface: "eth0", family: .ipv4))
            let setup = try Setup(server, monitor: monitor, transport: NetworkSwitch(gone: gone))
            defer { setup.remove() }
            let file = contentPattern(300_000)
            let parts = AsyncStream<Operations.UploadAttachment.Input.Body.MultipartFormPayload> { continuation in
                continuation.yield(.caption(.init(payload: .init(body: HTTPBody("queued upload")))))
                continuation.yield(.file(.init(payload: .init(body: streamedBody(file)), filename: "big.bin")))
                continuation.finish()
            }
            let outcome = try await OperationOutcome.of {
                try await setup.client.uploadAttachment(path: .init(noteId: 5), body: .multipartForm(MultipartBody(parts)))
            }
            let ticket = try #require(outcome.queued?.ticket)
            #expect(server.responder.received.isEmpty)
            #expect(try await setup.queue.entry(ticket.id)?.name == "uploadAttachment")

            gone.withLock { $0 = false }
            #expect(try await setup.queue.drain().delivered == 1)
            let received = try #require(server.responder.received.last)
            let stored = try MultipartReader.parts(of: try #require(received.body), contentType: received.head.headerFields[.contentType] ?? "")
            #expect(stored.map(\.name) == ["caption", "file"])
            #expect(stored.last?.body == file)
        }
    }
}

/// A transport that fails as a dead network does ("not connected") while `gone` is set.
private struct NetworkSwitch: Transport {
    let gone: LockedBox<Bool>

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        if gone.current { throw NetworkError.transport(TransportFailure(.notConnected, "the network is down")) }
        return try await sharedAsyncHTTPClient.send(request, body: body, timeout: timeout)
    }
}
