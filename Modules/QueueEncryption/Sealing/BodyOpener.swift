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
            guard let plaintext = stream.open(chunk, chunk: number, last: false) else {
                throw Self.failure(chunk, number: number, last: false, stream: stream)
            }
            if output.isEmpty { output = plaintext } else { output.append(plaintext) }
        }
        return output
    }

    /// ``update(_:)`` that writes the plaintext into `buffer` from `offset`, and advances
    /// `offset` past it, instead of returning it: a body opened whole into memory is written
    /// there once. Throws `invalidSeal` when the plaintext would not fit.
    mutating func update(_ sealed: Data, into buffer: UnsafeMutableRawBufferPointer, offset: inout Int) throws(SealError) {
        precondition(!finished, "BodyOpener.update after finish")
        let stream = stream
        try cutter.append(sealed) { (chunk, number) throws(SealError) in
            let target = try Self.room(for: chunk, in: buffer, at: offset, stream: stream)
            guard stream.open(chunk, chunk: number, last: false, into: target) else {
                throw Self.failure(chunk, number: number, last: false, stream: stream)
            }
            offset += target.count
        }
    }

    /// Opens the final chunk and returns its plaintext: the value was whole and unaltered.
    /// The opener cannot be used after this.
    public mutating func finish() throws(SealError) -> Data {
        let (chunk, number) = try finalChunk()
        guard let plaintext = stream.open(chunk, chunk: number, last: true) else {
            throw Self.failure(chunk, number: number, last: true, stream: stream)
        }
        try Self.checkFinal(size: plaintext.count, number: number, stream: stream)
        return plaintext
    }

    /// ``finish()`` that writes the final chunk's plaintext into `buffer` from `offset`, as
    /// ``update(_:into:offset:)`` does.
    mutating func finish(into buffer: UnsafeMutableRawBufferPointer, offset: inout Int) throws(SealError) {
        let (chunk, number) = try finalChunk()
        let target = try Self.room(for: chunk, in: buffer, at: offset, stream: stream)
        guard stream.open(chunk, chunk: number, last: true, into: target) else {
            throw Self.failure(chunk, number: number, last: true, stream: stream)
        }
        try Self.checkFinal(size: target.count, number: number, stream: stream)
        offset += target.count
    }

    /// The chunk held back, which is the final one, at least a tag long.
    private mutating func finalChunk() throws(SealError) -> (Data, Int) {
        precondition(!finished, "BodyOpener.finish called twice")
        finished = true
        let (chunk, number) = cutter.finish()
        guard chunk.count >= SealFormat.tagSize else { throw .truncated(field: stream.field, chunk: number) }
        return (chunk, number)
    }

    /// What sealed chunk `chunk` (number `number`), which did not open as the chunk it was
    /// taken for (the final one when `last`), is instead: an inner chunk that opens as a final
    /// one has data after it; a final one that opens as an inner one was cut after it; any
    /// other did not authenticate.
    private static func failure(_ chunk: Data, number: Int, last: Bool, stream: ChunkStream) -> SealError {
        if stream.open(chunk, chunk: number, last: !last) != nil {
            return last ? .truncated(field: stream.field, chunk: number + 1) : .trailingData(field: stream.field, chunk: number)
        }
        return .authenticationFailed(field: stream.field, chunk: number)
    }

    /// A final chunk of `size` bytes after `number` full ones: empty only as the whole value.
    private static func checkFinal(size: Int, number: Int, stream: ChunkStream) throws(SealError) {
        if size == 0 && number > 0 {
            throw .invalidSeal("the sealed \(stream.field) ends in an empty chunk after a full one, which no sealer writes")
        }
    }

    /// Where in `buffer`, from `offset`, the plaintext of sealed `chunk` goes.
    private static func room(for chunk: Data, in buffer: UnsafeMutableRawBufferPointer, at offset: Int, stream: ChunkStream) throws(SealError) -> UnsafeMutableRawBufferPointer {
        let size = chunk.count - SealFormat.tagSize
        guard size <= buffer.count - offset else {
            throw .invalidSeal("the sealed \(stream.field) is longer than its recorded size")
        }
        return UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + size)])
    }
}
