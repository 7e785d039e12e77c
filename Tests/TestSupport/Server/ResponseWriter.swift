public import Foundation
public import NIOCore

/// Writes one response as raw HTTP/1.1 bytes, so a route can also break the protocol on
/// purpose: stop mid-body, send garbage, or close the connection.
///
/// A response is a head (``writeHead(status:reason:headers:)``), body bytes
/// (``writeBody(_:)-(ByteBuffer)``, framed as chunks when the head says
/// `Transfer-Encoding: chunked`) and ``finish()``. For `HEAD` requests body bytes are dropped.
public final class ResponseWriter {
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private let dropsBody: Bool
    private var chunked = false
    /// Whether the connection is closed after this response.
    public private(set) var closesConnection = false

    init(outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, method: String) {
        self.outbound = outbound
        self.dropsBody = method == "HEAD"
    }

    /// Writes the status line and header fields. Adds `Connection: close` when
    /// ``closeConnection()`` was called before.
    public func writeHead(status: Int, reason: String? = nil, headers: [HeaderField]) async throws {
        var text = "HTTP/1.1 \(status) \(reason ?? Self.reason(for: status))\r\n"
        for field in headers {
            text += "\(field.name): \(field.value)\r\n"
            if field.name.lowercased() == "transfer-encoding", field.value.lowercased().contains("chunked") { chunked = true }
        }
        if closesConnection { text += "Connection: close\r\n" }
        text += "\r\n"
        try await outbound.write(ByteBuffer(string: text))
    }

    /// Writes body bytes, as one chunk when the body is chunked.
    public func writeBody(_ bytes: ByteBuffer) async throws {
        guard !dropsBody, bytes.readableBytes > 0 else { return }
        if chunked {
            var framed = ByteBuffer(string: String(bytes.readableBytes, radix: 16) + "\r\n")
            framed.writeImmutableBuffer(bytes)
            framed.writeString("\r\n")
            try await outbound.write(framed)
        } else {
            try await outbound.write(bytes)
        }
    }

    /// Writes body bytes, as one chunk when the body is chunked.
    public func writeBody(_ bytes: Data) async throws {
        try await writeBody(ByteBuffer(bytes: bytes))
    }

    /// Ends the body: the last chunk for a chunked body, nothing otherwise.
    public func finish() async throws {
        if chunked, !dropsBody { try await outbound.write(ByteBuffer(string: "0\r\n\r\n")) }
    }

    /// Writes bytes as they are, bypassing all framing (for garbage and broken responses).
    public func writeRaw(_ bytes: ByteBuffer) async throws {
        try await outbound.write(bytes)
    }

    /// Closes the connection once the route returns.
    public func closeConnection() {
        closesConnection = true
    }

    /// A whole response: head with `Content-Length` (unless the status forbids a body), body.
    public func respond(status: Int, headers: [HeaderField] = [], body: Data = Data()) async throws {
        var fields = headers
        let hasBody = status != 204 && status != 304 && !(100..<200).contains(status)
        if hasBody, !fields.contains(where: { $0.name.lowercased() == "content-length" }) {
            fields.append(HeaderField(name: "Content-Length", value: String(body.count)))
        }
        try await writeHead(status: status, headers: fields)
        if hasBody { try await writeBody(body) }
    }

    /// `value` as JSON with `Content-Type: application/json`.
    public func respondJSON<Value: Encodable>(_ value: Value, status: Int = 200, headers: [HeaderField] = []) async throws {
        let body = try JSONEncoder().encode(value)
        try await respond(status: status, headers: headers + [HeaderField(name: "Content-Type", value: "application/json")], body: body)
    }

    static func reason(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status \(status)"
        }
    }
}
