import Foundation
import HTTPCore

/// Reads the start of a response body for an error handler without losing the rest.
enum ExcerptedBody {
    /// The first `limit` bytes of `body` (or all of it when shorter), and a stream that
    /// yields the whole body: the bytes already read, then the rest of the original.
    static func read(_ body: ByteStream, limit: Int) async throws -> (excerpt: Data, stream: ByteStream) {
        let source = RemainingBody(body.makeAsyncIterator())
        var chunks: [Data] = []
        var size = 0
        while size < limit, let chunk = try await source.next() {
            chunks.append(chunk)
            size += chunk.count
        }
        var excerpt = Data()
        for chunk in chunks { excerpt.append(chunk) }
        excerpt = excerpt.prefix(limit)
        let replay = LockedChunks(chunks)
        let stream = ByteStream {
            if let chunk = replay.next() { return chunk }
            return try await source.next()
        }
        return (excerpt, stream)
    }

    /// Reads and drops up to `maxBytes` of `body`, so a connection can be reused before a
    /// retry; a longer body is abandoned.
    static func drain(_ body: ByteStream, upTo maxBytes: Int) async {
        var read = 0
        do {
            for try await chunk in body {
                read += chunk.count
                if read > maxBytes { return }
            }
        } catch {}
    }
}

/// The buffered chunks, handed out once each.
private final class LockedChunks: Sendable {
    private let chunks: LockedBox<[Data]>
    init(_ chunks: [Data]) { self.chunks = LockedBox(chunks) }
    func next() -> Data? { chunks.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
}

/// The rest of a response body, behind a reference so the replaying stream can go on
/// reading it.
///
/// `@unchecked Sendable` is sound: a `ByteStream` is single-pass and read by one consumer
/// at a time (its `init(next:)` contract), first by ``ExcerptedBody/read(_:limit:)`` and then,
/// strictly after it returns, by whoever reads the replaying stream; `iterator` is never
/// touched by two tasks at once.
private final class RemainingBody: @unchecked Sendable {
    private var iterator: ByteStream.AsyncIterator
    init(_ iterator: ByteStream.AsyncIterator) { self.iterator = iterator }
    func next() async throws -> Data? { try await iterator.next() }
}
