public import Foundation

/// Opens a sealed value chunk by chunk as it is read, in constant memory: it holds at most one
/// sealed chunk (``SealFormat/sealedChunkSize`` bytes) at a time.
///
/// Made by ``EntryCipher/bodyOpener()``. Feed the sealed bytes to ``update(_:)`` in pieces of
/// any size and use what each call returns, then call ``finish()`` for the final chunk's
/// plaintext. Every chunk is authenticated before its plaintext is returned, but a value is
/// only known whole and unaltered once ``finish()`` returns: a caller that must not act on a
/// partial value (an upload) runs ``EntryCipher/verifyBody(_:)`` over the whole value first.
///
/// Throws `authenticationFailed` for a changed byte, reordered chunks or a value moved from
/// another entry or field, `truncated` for a value cut short of its final chunk, and
/// `trailingData` for data after a full final chunk, each naming the chunk. Data appended
/// after a shorter final chunk runs into it, as a reader cannot tell where that chunk ended,
/// and fails as `authenticationFailed`.
public struct BodyOpener: Sendable {
    private let stream: ChunkStream
    private var cutter = ChunkCutter(size: SealFormat.sealedChunkSize)
    private var finished = false

    init(stream: ChunkStream) {
        self.stream = stream
    }

    /// Takes the next piece of the sealed value; returns the plaintext of the chunks it
    /// completed (possibly none). The last chunk is held back until ``finish()``.
    public mutating func update(_ sealed: Data) throws(SealError) -> Data {
        precondition(!finished, "BodyOpener.update after finish")
        let stream = stream
        var output = Data()
        try cutter.append(sealed) { (chunk, number) throws(SealError) in
            let plaintext = try Self.openInner(chunk, number: number, stream: stream)
            if output.isEmpty { output = plaintext } else { output.append(plaintext) }
        }
        return output
    }

    /// Opens the final chunk and returns its plaintext: the value was whole and unaltered.
    /// The opener cannot be used after this.
    public mutating func finish() throws(SealError) -> Data {
        precondition(!finished, "BodyOpener.finish called twice")
        finished = true
        let (chunk, number) = cutter.finish()
        guard chunk.count >= SealFormat.tagSize else { throw .truncated(field: stream.field, chunk: number) }
        guard let plaintext = stream.open(chunk, chunk: number, last: true) else {
            if stream.open(chunk, chunk: number, last: false) != nil { throw .truncated(field: stream.field, chunk: number + 1) }
            throw .authenticationFailed(field: stream.field, chunk: number)
        }
        if plaintext.isEmpty && number > 0 {
            throw .invalidSeal("the sealed \(stream.field) ends in an empty chunk after a full one, which no sealer writes")
        }
        return plaintext
    }

    /// Opens a chunk that more data follows.
    private static func openInner(_ sealed: Data, number: Int, stream: ChunkStream) throws(SealError) -> Data {
        guard let plaintext = stream.open(sealed, chunk: number, last: false) else {
            if stream.open(sealed, chunk: number, last: true) != nil { throw .trailingData(field: stream.field, chunk: number) }
            throw .authenticationFailed(field: stream.field, chunk: number)
        }
        return plaintext
    }
}
