import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

/// The request every queue benchmark enqueues, drains or posts raw: its headers and a ~130-byte
/// JSON body that differs per entry (1 KiB, or 10 MiB, for the sealing figures).
public enum QueuePayload {
    /// The URL every entry is enqueued for when no server is involved (enqueue figures).
    public static let url = "http://127.0.0.1:8080/events"

    public static let headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("X-Client", "courier-bench")]

    public static func body(_ index: Int) -> Data {
        Data(#"{"event":"click","n":\#(index),"at":"2026-11-23T00:00:00Z","payload":"\#(String(repeating: "x", count: 64))"}"#.utf8)
    }

    /// A 1,024-byte JSON body that differs per entry: the sealed enqueue's figure.
    public static func kibibyteBody(_ index: Int) -> Data {
        var body = kibibyteTemplate
        let digits = Array(String(index).utf8)
        body.replaceSubrange(22..<(22 + digits.count), with: digits)
        return body
    }

    /// `{"event":"click","n":` (22 bytes), room for the number, `"payload":"x…x"}`: 1,024 bytes.
    private static let kibibyteTemplate: Data = {
        let head = #"{"event":"click","n":"#, tail = #","payload":""#
        let number = String(repeating: " ", count: 20)
        return Data((head + number + tail + String(repeating: "x", count: 1_024 - head.utf8.count - 20 - tail.utf8.count - 2) + #""}"#).utf8)
    }()

    /// 10 MiB, made once: the large-body figures' body.
    public static let largeBody = Data(repeating: UInt8(ascii: "x"), count: 10 << 20)

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
