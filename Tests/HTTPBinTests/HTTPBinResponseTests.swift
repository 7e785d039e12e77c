import Foundation
import HTTPCore
import TestSupport
import HTTPTypes
import Testing

/// Response bodies and heads against httpbin: encodings, sizes, streaming, timeouts, cancellation.
@Suite("httpbin: responses, timeouts and cancellation")
struct HTTPBinResponseTests {
    @Test("/gzip arrives decoded", arguments: Transports.all)
    func gzip(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        struct Gzipped: Decodable { var gzipped: Bool }
        let response = try await bin.client(transport).send(Request<Gzipped>.get("/gzip"))
        #expect(response.body.gzipped)
    }

    @Test("/bytes/N gives exactly N bytes", arguments: Transports.all)
    func bytes(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let client = bin.client(transport)
        let first = try await client.send(Request<Data>.get("/bytes/50000?seed=7")).body
        let second = try await client.send(Request<Data>.get("/bytes/50000?seed=7")).body
        #expect(first.count == 50_000)
        #expect(second.count == 50_000)
        #expect(first.contains { $0 != 0 })
    }

    @Test("/stream-bytes/N streams N bytes in chunked encoding", arguments: Transports.all)
    func streamBytes(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let response = try await transport.make().send(
            HTTPRequest(method: .get, url: bin.url("/stream-bytes/90000?chunk_size=1000&seed=3")), body: nil, timeout: .hangGuard
        )
        var total = 0
        for try await chunk in response.body { total += chunk.count }
        #expect(response.head.status == .ok)
        #expect(response.head.headerFields[.contentLength] == nil)
        #expect(total == 90_000)
    }

    @Test("a download streams /stream-bytes to a file", arguments: Transports.all)
    func download(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-httpbin-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let response = try await bin.client(transport).download(Request<Data>.get("/stream-bytes/60000?seed=1"), to: file)
        #expect(response.metrics.bytesReceived == 60_000)
        #expect(try Data(contentsOf: file).count == 60_000)
    }

    @Test("/delay/N past a shorter timeout fails as timedOut", arguments: Transports.all)
    func delayTimeout(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        // An answer two minutes away (httpbin's /delay stops at 10 s): no load makes the
        // timeout come later than that.
        var request = Request<Data>.get("/drip?delay=120&numbytes=1")
        request.timeout = .milliseconds(700)
        await #expect {
            try await bin.client(transport).send(request)
        } throws: { error in
            guard case NetworkError.transport(let failure) = error else { return false }
            return failure.kind == .timedOut
        }
    }

    @Test("/delay/N within the timeout answers", arguments: Transports.all)
    func delayWithinTimeout(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        var request = Request<Data>.get("/delay/1")
        request.timeout = .hangGuard
        let response = try await bin.client(transport).send(request)
        #expect(response.status == .ok)
    }

    @Test("cancelling the calling task cancels the exchange with NetworkError.cancelled", arguments: Transports.all)
    func cancellation(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let client = bin.client(transport)
        let started = ContinuousClock.now
        // An answer two minutes away: the cancellation comes first however slow the machine.
        let call = Task { try await client.send(Request<Data>.get("/drip?delay=120&numbytes=1")) }
        try await Task.sleep(for: .milliseconds(300))
        let cancelledAt = ContinuousClock.now - started
        call.cancel()
        let result = await call.result
        guard case .failure(let error) = result, case NetworkError.cancelled = error else {
            // Times say which side was late if this ever fails beside other suites.
            Issue.record("expected NetworkError.cancelled, got \(result); cancelled after \(cancelledAt), ended after \(ContinuousClock.now - started)")
            return
        }
    }

    @Test("/response-headers sends back repeated fields", arguments: Transports.all)
    func repeatedResponseHeaders(_ transport: NamedTransport) async throws {
        let bin = try await HTTPBinServer.shared()
        let response = try await bin.client(transport).send(Request<Data>.get("/response-headers?X-Multi=a&X-Multi=b&X-Single=one"))
        let name = HTTPField.Name("X-Multi")!
        #expect(response.headers[values: name].flatMap(listValues) == ["a", "b"])
        #expect(response.headers[HTTPField.Name("X-Single")!] == "one")
    }
}
