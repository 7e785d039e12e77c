import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1

extension TestHTTPServer {
    /// Serves the requests of one connection in turn until the peer closes it, a route asks to
    /// close it, or the server shuts down.
    func serve(_ connection: LoopbackListener.Connection, id: Int) async {
        try? await connection.executeThenClose { inbound, outbound in
            var incoming = IncomingRequests(inbound, outbound)
            while let head = try await incoming.nextHead() {
                var size = 0
                var crc = CRC32()
                // `?crc=off` skips the checksum: for a 1 GiB upload it would cost 12 s of CPU in
                // a debug build, on the pool every other test needs.
                let checksum = !head.uri.contains("crc=off")
                var kept = keepsBodies(of: URLComponents(string: head.uri)?.percentEncodedPath ?? head.uri) ? Data() : nil
                try await incoming.readBody { buffer in
                    size += buffer.readableBytes
                    if checksum { crc.update(buffer) }
                    kept?.append(contentsOf: buffer.readableBytesView)
                }
                let request = Self.request(head, connectionID: id, bodySize: size, crc: crc.value)
                record(request, body: kept)
                let writer = ResponseWriter(outbound: outbound, method: request.method)
                if !head.isKeepAlive { writer.closeConnection() }
                let handler = customRoute(for: request.path) ?? Routes.handler(for: request)
                try await handler(request, writer)
                if writer.closesConnection { return }
            }
        }
    }

    private static func request(_ head: HTTPRequestHead, connectionID: Int, bodySize: Int, crc: UInt32) -> ServerRequest {
        let components = URLComponents(string: head.uri)
        let path = components?.percentEncodedPath ?? head.uri
        let query = (components?.queryItems ?? []).map { QueryItem(name: $0.name, value: $0.value) }
        return ServerRequest(
            connectionID: connectionID,
            method: head.method.rawValue,
            target: head.uri,
            path: path.isEmpty ? "/" : path,
            query: query,
            headers: head.headers.map { HeaderField(name: $0.name, value: $0.value) },
            bodySize: bodySize,
            bodyCRC32: crc
        )
    }
}
