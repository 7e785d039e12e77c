import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

extension TransportConformance {
    static let large = 10 * 1024 * 1024

    @Test("empty, small and 10 MiB streamed request bodies arrive intact", arguments: TransportFactories.all)
    func requestBodies(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            let empty = try harness.echo(try await harness.client.send(Request<Data>.post("/upload")))
            #expect(empty.bodySize == 0)

            let small = Data("{\"hello\":\"world\"}".utf8)
            let smallEcho = try harness.echo(try await harness.client.send(Request<Data>.post("/upload", body: .data(small, contentType: "application/json"))))
            #expect(smallEcho.bodySize == small.count)
            #expect(smallEcho.bodyCRC32 == CRC32.checksum(small))
            #expect(smallEcho.values(of: "Content-Type") == ["application/json"])

            let count = Self.large
            let sized = RequestContent.stream(length: count) { ByteStream(PayloadChunks(count: count)) }
            let sizedEcho = try harness.echo(try await harness.client.send(Request<Data>.put("/upload", body: sized)))
            #expect(sizedEcho.bodySize == count)
            #expect(sizedEcho.bodyCRC32 == TestPayload.crc32(count: count))
            #expect(sizedEcho.values(of: "Content-Length") == [String(count)])

            let chunkedCount = 1024 * 1024 + 17
            let chunked = RequestContent.stream(length: nil) { ByteStream(PayloadChunks(count: chunkedCount, chunkSize: 10_000)) }
            let chunkedEcho = try harness.echo(try await harness.client.send(Request<Data>.post("/upload", body: chunked)))
            #expect(chunkedEcho.bodySize == chunkedCount)
            #expect(chunkedEcho.bodyCRC32 == TestPayload.crc32(count: chunkedCount))
        }
    }

    @Test("a file upload streams from disk", arguments: TransportFactories.all)
    func fileUpload(_ factory: TransportFactory) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID().uuidString)")
        try TestPayload.data(count: 3 * 1024 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await Harness.run(factory) { harness in
            let response = try await harness.client.upload(Request<Data>.post("/upload"), fromFile: file)
            let echo = try harness.echo(response)
            #expect(echo.bodySize == 3 * 1024 * 1024)
            #expect(echo.bodyCRC32 == TestPayload.crc32(count: 3 * 1024 * 1024))
        }
    }

    @Test("10 MiB response bodies arrive intact, with Content-Length and chunked", arguments: TransportFactories.all)
    func responseBodies(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            for path in ["/bytes/\(Self.large)", "/bytes/\(Self.large)?chunked=1"] {
                let response = try await harness.client.send(Request<Data>.get(path))
                #expect(response.body.count == Self.large)
                #expect(CRC32.checksum(response.body) == TestPayload.crc32(count: Self.large))
            }
            let small = try await harness.client.send(Request<Data>.get("/bytes/10"))
            #expect(small.body == TestPayload.data(count: 10))
        }
    }

    @Test("a download streams to a file", arguments: TransportFactories.all)
    func download(_ factory: TransportFactory) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-download-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try await Harness.run(factory) { harness in
            let response = try await harness.client.download(Request<Data>.get("/bytes/\(Self.large)"), to: file)
            #expect(response.metrics.bytesReceived == Self.large)
            #expect(CRC32.checksum(try Data(contentsOf: file)) == TestPayload.crc32(count: Self.large))
        }
    }

    @Test("chunked responses arrive whole", arguments: TransportFactories.all)
    func chunkedResponse(_ factory: TransportFactory) async throws {
        try await Harness.run(factory) { harness in
            let response = try await harness.client.send(Request<Data>.get("/chunked?count=7&size=1000&delay=5"))
            #expect(response.body == TestPayload.data(count: 7000))
        }
    }

    @Test("a body over maxBodySize fails with bodyTooLarge", arguments: TransportFactories.all)
    func bodyTooLarge(_ factory: TransportFactory) async throws {
        try await Harness.run(factory, configure: { $0.maxBodySize = 1000 }) { harness in
            await expectNetworkError("bodyTooLarge(limit: 1000)", {
                _ = try await harness.client.send(Request<Data>.get("/bytes/\(Self.large)"))
            }, matches: { error in
                if case .bodyTooLarge(1000) = error { return true }
                return false
            })
        }
    }

    @Test("a chunked body that passes maxBodySize mid-way fails with bodyTooLarge; one within it arrives whole", arguments: TransportFactories.all)
    func chunkedBodyTooLarge(_ factory: TransportFactory) async throws {
        try await Harness.run(factory, configure: { $0.maxBodySize = 2500 }) { harness in
            await expectNetworkError("bodyTooLarge(limit: 2500)", {
                _ = try await harness.client.send(Request<Data>.get("/chunked?count=7&size=1000&delay=5"))
            }, matches: { error in
                if case .bodyTooLarge(2500) = error { return true }
                return false
            })
            let within = try await harness.client.send(Request<Data>.get("/chunked?count=2&size=1000&delay=5"))
            #expect(within.body == TestPayload.data(count: 2000))
            // The transport's collecting hint still hands over every byte of a longer body, in order.
            let head = HTTPRequest(method: .get, url: harness.server.url("/chunked?count=7&size=1000&delay=5"))
            let raw = try await harness.transport.send(head, body: nil, timeout: .hangGuard, collectingUpTo: 2500)
            #expect(try await raw.body.collect(upTo: 1 << 20) == TestPayload.data(count: 7000))
        }
    }
}
