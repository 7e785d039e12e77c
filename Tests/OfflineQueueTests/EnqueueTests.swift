import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueue
import Reachability
import QueueTestSupport
import Testing
import TestSupport

/// What is stored, what is not, and how a stored request comes back.
@Suite("Enqueue: keys, secrets, templates, send-through and events")
struct EnqueueTests {
    struct Event: Endpoint {
        var path: String { "/echo" }
        var method: HTTPRequest.Method { .post }
        var headers: HTTPFields { [.authorization: "Bearer at-enqueue", .cookie: "session=1"] }
        var body: RequestContent { .json(["kind": "click"]) }
        var scopes: Set<PluginScope> { ["auth"] }
    }

    /// Adds a fresh token each time it runs, counting the runs.
    struct FreshToken: Plugin {
        let runs = LockedBox(0)
        var scope: PluginScope { "auth" }
        func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
            let run = runs.withLock { count -> Int in
                count += 1
                return count
            }
            var request = request
            request.headers[.authorization] = "Bearer fresh-\(run)"
            return request
        }
    }

    @Test("a caller-given key deduplicates; a generated key is stable across attempts")
    func idempotency() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let first = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, options: EnqueueOptions(idempotencyKey: "order-17"))
        let second = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, options: EnqueueOptions(idempotencyKey: "order-17"))
        #expect(!first.deduplicated)
        #expect(second.deduplicated)
        #expect(second.id == first.id)
        let viaHeader = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString, headers: [("Idempotency-Key", "order-18")])
        #expect(viaHeader.idempotencyKey == "order-18")
        #expect(try await queue.counts().pending == 2)
        try await drainUntilSettled(queue)
        #expect(Set(idempotencyKeys(server)) == ["order-17", "order-18"])
        await server.shutdown()
    }

    @Test("concurrent enqueues commit together: each caller's rows are committed when it returns, tickets are its own, a key given twice is one row")
    func concurrentEnqueuesCommitTogether() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let url = server.url("/echo").absoluteString
        // 48 callers of one request each and 16 of a batch of three, with keys 0…7 given twice.
        let tickets = try await withThrowingTaskGroup(of: [Ticket].self) { group in
            for caller in 0..<64 {
                group.addTask {
                    let requests = (0..<(caller < 48 ? 1 : 3)).map { part in
                        QueuedRequest(method: "POST", url: url, options: EnqueueOptions(idempotencyKey: caller < 16 ? "twice-\(caller % 8)" : "c\(caller)-\(part)"))
                    }
                    let tickets = try await queue.enqueue(requests)
                    // Committed when the call returns: another connection sees every row.
                    for ticket in tickets { #expect(try await queue.entry(ticket.id)?.idempotencyKey == ticket.idempotencyKey) }
                    return tickets
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(tickets.count == 48 + 16 * 3)
        #expect(tickets.filter(\.deduplicated).count == 8, "each of the eight keys given twice is stored once")
        #expect(Set(tickets.map(\.id)).count == tickets.count - 8)
        #expect(try await queue.counts().pending == tickets.count - 8)
        await server.shutdown()
    }

    @Test("secret headers are not stored; the scoped plugin adds a fresh token at replay")
    func secretsDroppedAndRefreshed() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let token = FreshToken()
        let queue = try makeQueue(path: folder.databasePath, server: server, plugins: [token])
        let ticket = try await queue.enqueue(Event())
        let stored = try #require(try await queue.entry(ticket.id))
        #expect(!stored.headers.contains { $0.name.lowercased() == "authorization" || $0.name.lowercased() == "cookie" })
        #expect(stored.scopes == ["auth"])
        #expect(token.runs.current == 0, "plugins do not run at enqueue")
        let files = [folder.databasePath, folder.databasePath + "-wal"].compactMap { FileManager.default.contents(atPath: $0) }
        let raw = files.map { String(decoding: $0, as: UTF8.self) }.joined()
        #expect(!raw.contains("at-enqueue"), "the token is nowhere in the file")
        try await drainUntilSettled(queue)
        let seen = try #require(server.requests.last)
        #expect(seen.values(of: "Authorization") == ["Bearer fresh-1"])
        #expect(seen.values(of: "Cookie").isEmpty)
        await server.shutdown()
    }

    @Test("secrets are refused with .reject, kept with .store, and templates pass and resolve at send time")
    func secretHandling() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let credentials = folder.url.appendingPathComponent("creds")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try "s3cr3t\n".write(to: credentials.appendingPathComponent("api-token"), atomically: true, encoding: .utf8)
        let rejecting = try makeQueue(path: folder.databasePath, server: server) { configuration in
            configuration.secrets = .reject
            configuration.secretHeaders.insert(HTTPField.Name("X-Api-Key")!)
            configuration.templates = HeaderTemplates(environment: ["API_TOKEN": "from-env"], credentialsDirectory: credentials)
            for name in ["API_TOKEN", "api-token", "NOT_SET"] { try? configuration.templates.allow(name, for: server.baseURL.absoluteString) }
        }
        let url = server.url("/echo").absoluteString
        await #expect(throws: QueueError.secretHeader(name: "Authorization")) {
            try await rejecting.enqueue(method: "POST", url: url, headers: [("Authorization", "Bearer raw")])
        }
        await #expect(throws: QueueError.secretHeader(name: "X-Api-Key")) {
            try await rejecting.enqueue(method: "POST", url: url, headers: [("X-Api-Key", "raw")])
        }
        #expect(try await rejecting.counts().total == 0, "nothing stored by a refused enqueue")
        _ = try await rejecting.enqueue(method: "POST", url: url, headers: [("Authorization", "Bearer ${env:API_TOKEN}"), ("X-Api-Key", "${credential:api-token}")])
        try await drainUntilSettled(rejecting)
        let seen = try #require(server.requests.last)
        #expect(seen.values(of: "Authorization") == ["Bearer from-env"])
        #expect(seen.values(of: "X-Api-Key") == ["s3cr3t"])

        let missing = try await rejecting.enqueue(method: "POST", url: url, headers: [("Authorization", "Bearer ${env:NOT_SET}")])
        try await drainUntilSettled(rejecting)
        let dead = try #require(try await rejecting.entry(missing.id))
        #expect(dead.state == .dead)
        #expect(dead.lastError?.contains("NOT_SET") == true)

        let storing = try makeQueue(path: folder.url.appendingPathComponent("other.db").path, server: server) { $0.secrets = .store }
        let kept = try await storing.enqueue(method: "POST", url: url, headers: [("Authorization", "Bearer kept")])
        #expect(try await storing.entry(kept.id)?.headers == [StoredHeader(name: "Authorization", value: "Bearer kept")])
        await server.shutdown()
    }

    @Test("send: online sends now; offline (monitor) or a not-connected failure stores")
    func sendThrough() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let monitor = ManualMonitor(.online(interface: "lo", family: .ipv4))
        let queue = try makeQueue(path: folder.databasePath, server: server, monitor: monitor)
        guard case .sent(let response) = try await queue.send(Event()) else { Issue.record("expected a send"); return }
        #expect(response.status == .ok)
        monitor.status = .offline(.noCarrier)
        let before = server.requests.count
        guard case .queued(let ticket) = try await queue.send(Event()) else { Issue.record("expected a ticket"); return }
        #expect(server.requests.count == before, "nothing went on the wire")
        #expect(try await queue.entry(ticket.id)?.state == .pending)

        // No monitor, and a transport that says the network is gone: stored too.
        let stub = StubTransport(fallback: .failure(.transport(TransportFailure(.notConnected, "network is unreachable"))))
        let offlineClient = APIClient(baseURL: server.baseURL, transport: stub)
        let stubQueue = try OfflineQueue(configuration: QueueConfiguration(path: folder.url.appendingPathComponent("stub.db").path), client: offlineClient)
        #expect(try await stubQueue.send(Event()).ticket != nil)
        // Online again, other failures are the caller's to handle, typed: SendError.network.
        monitor.status = .online(interface: "lo", family: .ipv4)
        do throws(SendError) {
            _ = try await queue.send(Request<Data>.get(server.url("/status/404").absoluteString))
            Issue.record("expected the 404 to be thrown")
        } catch .network(.notFound(let response)) {
            #expect(response.status == .notFound)
        } catch {
            Issue.record("unexpected \(error)")
        }
        await server.shutdown()
    }

    @Test("typed throws: enqueue(endpoint) throws QueueError; send throws SendError, .queue when storing fails")
    func typedErrors() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let monitor = ManualMonitor(.offline(.noCarrier))
        let queue = try makeQueue(path: folder.databasePath, server: server, monitor: monitor)
        // A request the client cannot build is an invalid request for the queue.
        let unbuildable = Request<Data>.post("/echo", body: .failure(.encoding(EncodingFailure(keyPath: ["score"], message: "nan is not a number"))))
        do throws(QueueError) {
            _ = try await queue.enqueue(unbuildable)
            Issue.record("expected a refusal")
        } catch let error where error.kind == .invalidRequest {
            let reason = error.reason ?? ""
            #expect(reason.contains("score: nan is not a number"), "\(reason)")
        } catch {
            Issue.record("unexpected \(error)")
        }
        // Offline, a store that cannot write: the caller learns that nothing was stored.
        let reader = try makeQueue(path: folder.databasePath, server: server, monitor: monitor) { $0.readOnly = true }
        do throws(SendError) {
            _ = try await reader.send(Event())
            Issue.record("expected a refusal")
        } catch .queue(let error) where error.kind == .readOnly {
            #expect(error.description.contains("read-only"), "\(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(try await queue.counts().total == 0)
        await server.shutdown()
    }

    @Test("events tell the story of an entry")
    func events() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        scriptFailures(server, "/story", [(503, [])])
        let clock = ManualQueueClock()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.clock = clock.queueClock }
        let events = queue.events()
        let ticket = try await queue.enqueue(method: "POST", url: server.url("/story").absoluteString)
        let dead = try await queue.enqueue(method: "POST", url: server.url("/status/410").absoluteString)
        try await drainUntilSettled(queue, advancing: clock)
        var seen: [QueueEvent] = []
        for await event in events {
            seen.append(event)
            if seen.contains(.delivered(id: ticket.id, status: 200)) && seen.contains(where: { if case .deadLettered(dead.id, .rejected, _) = $0 { true } else { false } }) { break }
        }
        #expect(seen.first == .enqueued(ticket))
        #expect(seen.contains(.attemptStarted(id: ticket.id, attempt: 1)))
        #expect(seen.contains(.attemptStarted(id: ticket.id, attempt: 2)))
        #expect(seen.contains { if case .willRetry(ticket.id, _, "HTTP 503") = $0 { true } else { false } })
        await server.shutdown()
    }

    @Test("a replay is the stored request itself: the row's headers over the client's defaults, the body's length, the key; a prepared request is stored typed until its text is changed")
    func replayIsTheStoredRequest() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        var clientConfiguration = ClientConfiguration(baseURL: server.baseURL)
        clientConfiguration.defaultHeaders = [.accept: "application/json", .userAgent: "courier-test"]
        let client = APIClient(configuration: clientConfiguration, transport: sharedTransport)
        let queue = try OfflineQueue(configuration: QueueConfiguration(path: folder.databasePath), client: client)
        let text = try await queue.enqueue(method: "PUT", url: server.url("/echo?n=1").absoluteString,
                                           headers: [("Accept", "text/plain")], body: .data(Data("12345".utf8)))
        try await drainUntilSettled(queue)
        let seen = try #require(server.requests.first { $0.queryValue("n") == "1" })
        #expect(seen.values(of: "Accept") == ["text/plain"], "the row's field replaces the default")
        #expect(seen.values(of: "User-Agent") == ["courier-test"], "a default the row does not set is added")
        #expect(seen.values(of: "Content-Length") == ["5"])
        #expect(seen.values(of: "Idempotency-Key") == [text.idempotencyKey])

        var prepared = QueuedRequest(try client.request(for: Request<Data>.post("/echo?n=2")))
        #expect(try await queue.enqueue([prepared]).count == 1)
        prepared.url = "not a url"
        await #expect(throws: QueueError.self) { try await queue.enqueue([prepared]) }
        await server.shutdown()
    }

    @Test("bad requests are refused at enqueue and store nothing")
    func invalidRequests() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        for (method, url) in [("POST", "not a url"), ("POST", "ftp://example.invalid/x"), ("POST", "http://"), ("POST", "/relative/path"), ("GE T", "http://127.0.0.1/x")] {
            await #expect(throws: QueueError.self) { try await queue.enqueue(method: method, url: url) }
        }
        await #expect(throws: QueueError.self) { try await queue.enqueue(method: "POST", url: "http://127.0.0.1/x", headers: [("Bad Name", "v")]) }
        await #expect(throws: QueueError.self) { try await queue.enqueue(method: "POST", url: "http://127.0.0.1/x", headers: [("X-Split", "a\r\nInjected: 1")]) }
        #expect(try await queue.counts().total == 0)
        await server.shutdown()
    }
}

/// Where a template's secret may go, and where it must never come to rest.
@Suite("Templates bound to origins; nothing at rest")
struct TemplateOriginTests {
    @Test("a template resolves only for the origins allowed for it: another origin gets nothing and the entry is dead with the reason")
    func boundToOrigins() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let allowed = try await TestHTTPServer.start()
        let other = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: allowed) { configuration in
            configuration.templates = HeaderTemplates(environment: ["API_TOKEN": "tok-123456"], credentialsDirectory: nil)
            try? configuration.templates.allow("API_TOKEN", for: allowed.baseURL.absoluteString)
        }
        let good = try await queue.enqueue(method: "POST", url: allowed.url("/echo").absoluteString, headers: [("Authorization", "Bearer ${env:API_TOKEN}")])
        let bad = try await queue.enqueue(method: "POST", url: other.url("/echo").absoluteString, headers: [("X-Anything", "${env:API_TOKEN}")])
        try await drainUntilSettled(queue)
        #expect(try await queue.entry(good.id)?.state == .delivered)
        #expect(allowed.requests.last?.values(of: "Authorization") == ["Bearer tok-123456"])
        let dead = try #require(try await queue.entry(bad.id))
        #expect(dead.state == .dead)
        #expect(dead.lastError?.contains("${env:API_TOKEN} is not allowed for \(other.baseURL.absoluteString)") == true, "\(dead.lastError ?? "")")
        #expect(other.requests.isEmpty, "the other origin never saw a request")
        await allowed.shutdown()
        await other.shutdown()
    }

    @Test("a server that echoes the request's headers into its error body: the token is not at rest in the database")
    func echoedSecretNotStored() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        server.route("/echo-error") { request, writer in
            let echoed = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
            try await writer.respond(status: 400, body: Data(echoed.utf8))
        }
        let queue = try makeQueue(path: folder.databasePath, server: server, plugins: [BearerTokenStub()]) { configuration in
            configuration.templates = HeaderTemplates(environment: ["API_TOKEN": "tok-from-template-42"], credentialsDirectory: nil)
            try? configuration.templates.allow("API_TOKEN", for: server.baseURL.absoluteString)
        }
        let ticket = try await queue.enqueue(method: "POST", url: server.url("/echo-error").absoluteString,
                                             headers: [("X-Auth-Token", "${env:API_TOKEN}")])
        try await drainUntilSettled(queue)
        let entry = try #require(try await queue.entry(ticket.id))
        #expect(entry.state == .dead)
        #expect(entry.responseExcerpt?.contains("<redacted>") == true, "\(entry.responseExcerpt ?? "")")
        let bytes = try [folder.databasePath, folder.databasePath + "-wal"].compactMap { path in
            FileManager.default.fileExists(atPath: path) ? try Data(contentsOf: URL(fileURLWithPath: path)) : nil
        }.reduce(Data(), +)
        for secret in ["tok-from-template-42", "plugin-token-99"] {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) is at rest in the database")
        }
        await server.shutdown()
    }

    @Test("the secret-header set is one: the six credential fields by default, and a template mixed with a literal is a secret")
    func oneSecretSet() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.secrets = .reject }
        #expect(queue.configuration.secretHeaders == HTTPField.Name.credentialFields)
        let url = server.url("/echo").absoluteString
        for name in ["Authorization", "Cookie", "Proxy-Authorization", "X-API-Key", "Api-Key", "X-Auth-Token"] {
            await #expect(throws: QueueError.secretHeader(name: name)) {
                try await queue.enqueue(method: "POST", url: url, headers: [(name, "raw-value")])
            }
        }
        await #expect(throws: QueueError.secretHeader(name: "X-Custom")) {
            try await queue.enqueue(method: "POST", url: url, headers: [("X-Custom", "sk_live_123${env:SUFFIX}")])
        }
        // A scheme word before the template is not a secret.
        _ = try await queue.enqueue(method: "POST", url: url, headers: [("Authorization", "Bearer ${credential:api-token}")])
        await server.shutdown()
    }
}

extension TemplateOriginTests {
    @Test("an online send resolves templates as a replay does: its origin only, dropped by a redirect that leaves it, stored as the template when the network is gone")
    func onlineSend() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let allowed = try await TestHTTPServer.start()
        let other = try await TestHTTPServer.start()
        allowed.route("/hop") { _, writer in
            try await writer.respond(status: 307, headers: [HeaderField(name: "Location", value: other.url("/echo?landed=1").absoluteString)])
        }
        let monitor = ManualMonitor(.online(interface: "lo", family: .ipv4))
        let queue = try makeQueue(path: folder.databasePath, server: allowed, monitor: monitor) { configuration in
            configuration.templates = HeaderTemplates(environment: ["API_TOKEN": "tok-online-77"], credentialsDirectory: nil)
            try? configuration.templates.allow("API_TOKEN", for: allowed.baseURL.absoluteString)
        }
        let templated: HTTPFields = [.authorization: "Bearer ${env:API_TOKEN}", HTTPField.Name("X-Trace")!: "t-${env:API_TOKEN}"]

        // The allowed origin gets the value.
        guard case .sent(let response) = try await queue.send(Request<Data>.post("/echo", headers: templated)) else {
            Issue.record("expected a send"); return
        }
        #expect(response.status == .ok)
        #expect(allowed.requests.last?.values(of: "Authorization") == ["Bearer tok-online-77"])
        #expect(allowed.requests.last?.values(of: "X-Trace") == ["t-tok-online-77"])

        // Another origin: refused before anything is sent or stored.
        do throws(SendError) {
            _ = try await queue.send(Request<Data>.post(other.url("/echo").absoluteString, headers: templated))
            Issue.record("expected a refusal")
        } catch .template(let error) {
            #expect(error == .notAllowed(template: "${env:API_TOKEN}", origin: other.baseURL.absoluteString))
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(other.requests.isEmpty)

        // A redirect off the origin: the resolved fields stay behind.
        _ = try await queue.send(Request<Data>.post("/hop", headers: templated))
        let landed = try #require(other.requests.last)
        #expect(landed.queryValue("landed") == "1")
        #expect(landed.values(of: "Authorization").isEmpty && landed.values(of: "X-Trace").isEmpty, "\(landed.headers)")

        // Offline: stored as the template, the value nowhere in the file.
        monitor.status = .offline(.noCarrier)
        let ticket = try #require(try await queue.send(Request<Data>.post("/echo", headers: templated)).ticket)
        let stored = try #require(try await queue.entry(ticket.id))
        #expect(stored.headers.contains(StoredHeader(name: "Authorization", value: "Bearer ${env:API_TOKEN}")))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.databasePath)) + ((try? Data(contentsOf: URL(fileURLWithPath: folder.databasePath + "-wal"))) ?? Data())
        #expect(bytes.range(of: Data("tok-online-77".utf8)) == nil)
        #expect(try await queue.counts().total == 1)
        await allowed.shutdown()
        await other.shutdown()
    }

    @Test("times from input are range-checked: a notBefore centuries away or past the maximum age, a timeout that is not positive")
    func timesRangeChecked() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server, policy: DeliveryPolicy(maxAge: .seconds(3600)))
        let url = server.url("/echo").absoluteString
        for notBefore in [Date(timeIntervalSince1970: 1e300), Date.distantFuture, Date().addingTimeInterval(7200)] {
            // A typed do: `catch let error as QueueError where …` in an untyped one crashes
            // Swift 6.3.1's SIL ownership verifier.
            do throws(QueueError) {
                _ = try await queue.enqueue(method: "POST", url: url, options: EnqueueOptions(notBefore: notBefore))
                Issue.record("notBefore \(notBefore) was accepted")
            } catch {
                let reason = error.reason ?? ""
                #expect(error.kind == .invalidRequest)
                #expect(reason.contains("100 years") || reason.contains("maximum age"), "\(reason)")
            }
        }
        // A long client timeout is stored (saturated), not trapped on.
        var request = try APIClient(baseURL: server.baseURL, transport: sharedTransport).request(for: Request<Data>.post(url))
        request.timeout = .seconds(Int64.max)
        let long = try await queue.enqueue(request)
        #expect(try await queue.entry(long.id)?.timeout == .milliseconds(Int64.max))
        request.timeout = .zero
        await #expect(throws: QueueError.self) { try await queue.enqueue(request) }
        // Within range it is kept.
        let soon = try await queue.enqueue(method: "POST", url: url, options: EnqueueOptions(notBefore: Date().addingTimeInterval(60)))
        #expect(try await queue.entry(soon.id)?.state == .pending)
        #expect(try await queue.counts().total == 2)
        await server.shutdown()
    }
}

/// Adds a bearer token at replay, as an authenticator would.
private struct BearerTokenStub: Plugin {
    func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        request.headers[.authorization] = "Bearer plugin-token-99"
        return request
    }
}
