import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

/// The request every queue benchmark enqueues, drains or posts raw: its headers and a ~130-byte
/// JSON body that differs per entry.
public enum QueuePayload {
    /// The URL every entry is enqueued for when no server is involved (enqueue figures).
    public static let url = "http://127.0.0.1:8080/events"

    public static let headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("X-Client", "courier-bench")]

    public static func body(_ index: Int) -> Data {
        Data(#"{"event":"click","n":\#(index),"at":"2026-11-23T00:00:00Z","payload":"\#(String(repeating: "x", count: 64))"}"#.utf8)
    }

    /// The request a drain sends for entry `index`, through raw AsyncHTTPClient: the headers, an
    /// idempotency key, the body; the response collected.
    public static func rawPOST(_ index: Int, url: String, client: HTTPClient) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        request.headers.add(name: "Idempotency-Key", value: UUID().uuidString.lowercased())
        request.body = .bytes(ByteBuffer(data: body(index)))
        let response = try await client.execute(request, timeout: .seconds(30))
        guard response.status == .ok else { throw BenchError("status \(response.status)") }
        _ = try await response.body.collect(upTo: 1 << 20)
    }
}
