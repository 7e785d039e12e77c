import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

/// Transport behaviour httpbin cannot show: large streamed bodies both ways, connection
/// failures, TLS, garbage and truncated responses. Runs on every transport in ``Transports``.
@Suite("transport edges against a scripted loopback server")
struct TransportEdgeTests {
    static let tenMiB = 10 * 1024 * 1024

    struct Verdict: Decodable { var count: Int; var pattern: Bool }

    /// `count` pattern bytes in chunks of 64 KiB, produced lazily.
    static func patternStream(count: Int) -> ByteStream {
        let produced = LockedBox(0)
        return ByteStream {
            let start = produced.withLock { $0 }
            guard start < count else { return nil }
            let size = min(64 * 1024, count - start)
            produced.withLock { $0 += size }
            return TestPayload.periodic(ScriptedServer.patternPeriod, offset: start, count: size)
        }
    }

    @Test("a 10 MiB chunked response streams in many chunks, every byte right", arguments: Transports.all)
    func largeDownload(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        let response = try await transport.make().send(
            HTTPRequest(method: .get, url: server.url("/bulk/\(Self.tenMiB)")), body: nil, timeout: .hangGuard
        )
        var total = 0, chunks = 0, wrong = 0
        for try await chunk in response.body {
            if chunk != TestPayload.periodic(ScriptedServer.patternPeriod, offset: total, count: chunk.count) { wrong += 1 }
            total += chunk.count
            chunks += 1
        }
        #expect(total == Self.tenMiB)
        #expect(wrong == 0)
        #expect(chunks > 1)
    }

    @Test("a 10 MiB stream body of unknown length arrives whole", arguments: Transports.all)
    func largeStreamUpload(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        let body = RequestBody.stream(length: nil) { Self.patternStream(count: Self.tenMiB) }
        let response = try await transport.make().send(
            HTTPRequest(method: .put, url: server.url("/verify")), body: body, timeout: .hangGuard
        )
        let verdict = try JSONDecoder().decode(Verdict.self, from: try await response.body.collect(upTo: 1 << 16))
        #expect(verdict.count == Self.tenMiB)
        #expect(verdict.pattern)
    }

    @Test("a 10 MiB data body and an empty one arrive as sent", arguments: Transports.all)
    func dataUploads(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        let big = try await Self.patternStream(count: Self.tenMiB).collect(upTo: Self.tenMiB)
        let client = APIClient(baseURL: server.baseURL, transport: transport.make())
        let verdict = try await client.send(Request<Verdict>.post("/verify", body: .data(big))).body
        #expect(verdict.count == Self.tenMiB && verdict.pattern)
        let empty = try await client.send(Request<Verdict>.post("/verify", body: .data(Data()))).body
        #expect(empty.count == 0)
    }

    @Test("empty stream and empty file bodies are sent as empty bodies", arguments: Transports.all)
    func emptyBodies(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-empty-\(UUID().uuidString)")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for body in [RequestBody.stream(length: nil) { ByteStream(data: Data()) }, try RequestBody.file(file)] {
            let response = try await transport.make().send(HTTPRequest(method: .put, url: server.url("/verify")), body: body, timeout: .hangGuard)
            let verdict = try JSONDecoder().decode(Verdict.self, from: try await response.body.collect(upTo: 1 << 16))
            #expect(verdict.count == 0)
        }
    }

    @Test("a server that never answers hits a sub-second timeout as timedOut", arguments: Transports.all)
    func subSecondTimeout(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        await expectTransportFailure(.timedOut) {
            _ = try await transport.make().send(HTTPRequest(method: .get, url: server.url("/hang")), body: nil, timeout: .milliseconds(300))
        }
    }

    @Test("a port nobody listens on is cannotConnect", arguments: Transports.all)
    func refused(_ transport: NamedTransport) async throws {
        let port = try closedLoopbackPort()
        await expectTransportFailure(.cannotConnect) {
            _ = try await transport.make().send(HTTPRequest(method: .get, url: URL(string: "http://127.0.0.1:\(port)/")!), body: nil, timeout: .hangGuard)
        }
    }

    @Test("a self-signed certificate is rejected as a TLS failure", arguments: Transports.all)
    func selfSignedTLS(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.selfSignedTLS()
        await expectTransportFailure(.tls) {
            _ = try await transport.make().send(HTTPRequest(method: .get, url: server.url("/")), body: nil, timeout: .hangGuard)
        }
    }

    @Test("a body cut short is connectionLost", arguments: Transports.all)
    func truncatedBody(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        await expectTransportFailure(.connectionLost) {
            let response = try await transport.make().send(HTTPRequest(method: .get, url: server.url("/cut")), body: nil, timeout: .hangGuard)
            _ = try await response.body.collect(upTo: 1 << 20)
        }
    }

    @Test("an answer that is not HTTP is invalidResponse", arguments: Transports.all)
    func garbage(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        await expectTransportFailure(.invalidResponse) {
            let response = try await transport.make().send(HTTPRequest(method: .get, url: server.url("/garbage")), body: nil, timeout: .hangGuard)
            _ = try await response.body.collect(upTo: 1 << 20)
        }
    }

    @Test("a 3xx without Location still comes back as a response", arguments: Transports.all)
    func redirectWithoutLocation(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        let response = try await transport.make().send(HTTPRequest(method: .get, url: server.url("/moved-nowhere")), body: nil, timeout: .hangGuard)
        _ = try await response.body.collect(upTo: 1 << 20)
        #expect(response.head.status.code == 301)
    }

    @Test("dropping a body half-read frees the exchange; the next one works", arguments: Transports.all)
    func abandonedBody(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        let shared = transport.make()
        do {
            let response = try await shared.send(HTTPRequest(method: .get, url: server.url("/bulk/\(Self.tenMiB)")), body: nil, timeout: .hangGuard)
            var iterator = response.body.makeAsyncIterator()
            _ = try await iterator.next()
        }
        let next = try await shared.send(HTTPRequest(method: .get, url: server.url("/hello")), body: nil, timeout: .hangGuard)
        #expect(try await next.body.collect(upTo: 1 << 16).count > 0)
    }

    @Test("cancelling while the body streams ends the read with NetworkError.cancelled", arguments: Transports.all)
    func cancelDuringBody(_ transport: NamedTransport) async throws {
        let server = try await ScriptedServer.plain()
        let response = try await transport.make().send(HTTPRequest(method: .get, url: server.url("/bulk/\(Self.tenMiB)")), body: nil, timeout: .hangGuard)
        let reader = Task {
            var total = 0
            for try await chunk in response.body {
                total += chunk.count
                withUnsafeCurrentTask { $0?.cancel() }
            }
            return total
        }
        let result = await reader.result
        guard case .failure(let error) = result, case NetworkError.cancelled = error else {
            Issue.record("expected NetworkError.cancelled, got \(result)")
            return
        }
    }
}

/// Expects `body` to throw a transport failure of `kind`.
func expectTransportFailure(_ kind: TransportFailure.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected a \(kind) failure, but the exchange succeeded", sourceLocation: sourceLocation)
    } catch NetworkError.transport(let failure) {
        #expect(failure.kind == kind, "\(failure)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a \(kind) failure, got \(error)", sourceLocation: sourceLocation)
    }
}

/// A loopback port that was free a moment ago and has no listener now.
func closedLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
    return Int(UInt16(bigEndian: address.sin_port))
}
