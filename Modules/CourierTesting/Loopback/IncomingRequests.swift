package import NIOCore
package import NIOHTTP1

/// The requests of one connection, in turn: each head (after answering
/// `Expect: 100-continue`), then its body.
package struct IncomingRequests {
    private var parts: NIOAsyncChannelInboundStream<HTTPServerRequestPart>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    /// The requests arriving on `inbound`; `outbound` takes the `100 Continue` answers.
    package init(_ inbound: NIOAsyncChannelInboundStream<HTTPServerRequestPart>, _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        self.parts = inbound.makeAsyncIterator()
        self.outbound = outbound
    }

    /// The next request's head; `nil` once the peer has closed the connection.
    package mutating func nextHead() async throws -> HTTPRequestHead? {
        while let part = try await parts.next() {
            guard case .head(let head) = part else { continue }
            if head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                try await outbound.write(ByteBuffer(string: "HTTP/1.1 100 Continue\r\n\r\n"))
            }
            return head
        }
        return nil
    }

    /// Hands the body of the request whose head came last to `consume`, buffer by buffer,
    /// until it ends.
    package mutating func readBody(_ consume: (ByteBuffer) -> Void) async throws {
        while let part = try await parts.next() {
            switch part {
            case .body(let buffer): consume(buffer)
            case .end: return
            case .head: throw LoopbackServerError("a request head arrived inside a body")
            }
        }
    }
}
