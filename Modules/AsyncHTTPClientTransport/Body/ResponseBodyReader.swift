import AsyncHTTPClient
import Foundation
import HTTPCore
import NIOCore
import NIOFoundationCompat

/// An AsyncHTTPClient response body as `Data` chunks, with errors mapped to ``NetworkError``
/// and the request's deadline checked at every chunk: the source of the response's
/// ``ByteStream``, and its iterator too, so handing the body over allocates nothing else.
///
/// AsyncHTTPClient's deadline ends when the head arrives; after that a body that stalls is ended
/// by the client's read timeout, and one that keeps trickling past the deadline fails here at its
/// next chunk.
///
/// `@unchecked Sendable` is sound: a `ByteStream` has one consumer at a time (its contract), so
/// `iterator` is advanced by one task at a time; the other properties are constants.
final class ResponseBodyReader: ByteChunkSource, @unchecked Sendable {
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private let deadline: NIODeadline?
    /// The transport that owns the client: a body being read keeps it alive, so a caller that
    /// drops the transport before the body ends does not shut the client down under it.
    private let owner: any Sendable

    init(_ body: HTTPClientResponse.Body, deadline: NIODeadline?, owner: any Sendable) {
        self.iterator = body.makeAsyncIterator()
        self.deadline = deadline
        self.owner = owner
    }

    func next() async throws -> Data? {
        let buffer: ByteBuffer?
        do { buffer = try await iterator.next() } catch {
            throw TransportErrorMapping.map(error)
        }
        guard let buffer else { return nil }
        if let deadline, NIODeadline.now() > deadline {
            throw NetworkError.transport(TransportFailure(.timedOut, "the response body was still arriving at the deadline"))
        }
        // A chunk of a kilobyte or more shares the buffer's storage instead of being copied
        // (`Data(buffer:)` copies up to 256 KiB): whoever reads the body copies it once, into
        // its own storage, not twice.
        return Data(buffer: buffer, byteTransferStrategy: buffer.readableBytes >= 1024 ? .noCopy : .copy)
    }
}
