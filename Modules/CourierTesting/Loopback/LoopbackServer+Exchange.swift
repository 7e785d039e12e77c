import Foundation
import HTTPCore
import HTTPTypes
import NIOCore
import NIOHTTP1

extension LoopbackServer {
    /// Answers the requests of one connection in turn through `responder`, until the peer
    /// closes it, a request asks to close it, or the responder throws.
    static func serve(_ connection: LoopbackListener.Connection, responder: any Transport) async {
        try? await connection.executeThenClose { inbound, outbound in
            var incoming = IncomingRequests(inbound, outbound)
            while let head = try await incoming.nextHead() {
                var body = ByteBuffer()
                try await incoming.readBody { body.writeImmutableBuffer($0) }
                guard let request = request(head) else {
                    try await outbound.write(ByteBuffer(string: "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
                    return
                }
                let hasBody = head.headers.contains(name: "content-length") || head.headers.contains(name: "transfer-encoding")
                let response = try await responder.send(request, body: hasBody ? .data(Data(body.readableBytesView)) : nil, timeout: nil)
                try await write(response, answering: head, to: outbound)
                if !head.isKeepAlive { return }
            }
        }
    }

    /// `head` in HTTPTypes' terms: the `Host` header becomes the authority; `nil` for a method
    /// HTTPTypes does not take.
    static func request(_ head: HTTPRequestHead) -> HTTPRequest? {
        guard let method = HTTPRequest.Method(head.method.rawValue) else { return nil }
        var fields = HTTPFields()
        for (name, value) in head.headers where name.lowercased() != "host" {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return HTTPRequest(method: method, scheme: "http", authority: head.headers["host"].first, path: head.uri, headerFields: fields)
    }

    /// Writes `response` as HTTP/1.1: chunked when it has a body but no `Content-Length`, with
    /// no body where the method or status forbids one.
    static func write(_ response: TransportResponse, answering head: HTTPRequestHead, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws {
        let status = response.head.status
        let statusHasBody = status.code >= 200 && status.code != 204 && status.code != 304
        let bodyAllowed = statusHasBody && head.method != .HEAD
        let chunked = statusHasBody && response.head.headerFields[.contentLength] == nil
        var text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
        for field in response.head.headerFields where field.name != .connection && field.name != .transferEncoding {
            if field.name == .contentLength, !statusHasBody, status.code != 304 { continue }
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        if chunked { text += "Transfer-Encoding: chunked\r\n" }
        if !head.isKeepAlive { text += "Connection: close\r\n" }
        try await outbound.write(ByteBuffer(string: text + "\r\n"))
        guard bodyAllowed else { return }
        for try await chunk in response.body where !chunk.isEmpty {
            guard chunked else {
                try await outbound.write(ByteBuffer(bytes: chunk))
                continue
            }
            var framed = ByteBuffer(string: String(chunk.count, radix: 16) + "\r\n")
            framed.writeBytes(chunk)
            framed.writeString("\r\n")
            try await outbound.write(framed)
        }
        if chunked { try await outbound.write(ByteBuffer(string: "0\r\n\r\n")) }
    }
}
