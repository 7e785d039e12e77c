import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import HTTPTypes
import Testing
import TestSupport

@Suite("AsyncHTTPClientTransport: content codings it cannot decode")
struct ContentEncodingTests {
    /// `br` alone is decoded when the package is built with the Brotli trait (OperatorHostTests).
    #if Brotli
    static let unsupportedCodings = ["zstd", "gzip, br", "br, gzip"]
    #else
    static let unsupportedCodings = ["br", "zstd", "gzip, br"]
    #endif

    @Test("a zstd body, br without the Brotli trait, or br beside another coding fails as a transport error naming the coding, not as garbage to decode", arguments: Self.unsupportedCodings)
    func unsupported(coding: String) async throws {
        let server = try await TestHTTPServer.start()
        server.script("/encoded", headers: [HeaderField(name: "Content-Encoding", value: coding), HeaderField(name: "Content-Type", value: "application/json")],
                      body: Data([0x8b, 0x02, 0x80, 0x7b, 0x7d, 0x03]))
        let transport = AsyncHTTPClientTransport()
        let client = APIClient(baseURL: server.baseURL, transport: transport)
        await #expect {
            _ = try await client.send(Request<Data>.get("/encoded"))
        } throws: { error in
            guard case NetworkError.transport(let failure) = error else { return false }
            return failure.kind == .invalidResponse && failure.message.contains("content encoding")
                && failure.message.contains(coding.split(separator: ",").first { !$0.contains("gzip") }!.trimmingCharacters(in: .whitespaces))
        }
        try await transport.shutdown()
        await server.shutdown()
    }

}
