public import Foundation

/// Seals a value chunk by chunk as its plaintext arrives, in constant memory: it holds at most
/// one chunk (``SealFormat/chunkSize`` bytes) of plaintext at a time.
///
/// Made by ``EntryCipher/bodySealer()``. Feed the plaintext to ``update(_:)`` in pieces of any
/// size, write out what each call returns, then write what ``finish()`` returns: together they
/// are the sealed value, ``SealFormat/sealedSize(plaintextSize:)`` bytes long.
///
/// ```swift
/// var sealer = cipher.bodySealer()
/// for try await piece in body { try file.write(contentsOf: sealer.update(piece)) }
/// try file.write(contentsOf: sealer.finish())
/// ```
public struct BodySealer: Sendable {
    private let stream: ChunkStream
    private var cutter = ChunkCutter(size: SealFormat.chunkSize)
    private var finished = false

    init(stream: ChunkStream) {
        self.stream = stream
    }

    /// Takes the next piece of plaintext; returns the chunks it completed, sealed (possibly
    /// none). The last chunk is held back until ``finish()``.
    public mutating func update(_ plaintext: Data) -> Data {
        precondition(!finished, "BodySealer.update after finish")
        let stream = stream
        guard plaintext.count >= 2 * SealFormat.chunkSize else {
            // A piece that completes one chunk (a body read in chunks) returns that chunk as
            // AES-GCM wrote it.
            var output = Data()
            cutter.append(plaintext) { chunk, number in
                if output.isEmpty {
                    output = stream.seal(chunk, chunk: number, last: false)
                } else {
                    stream.seal(chunk, chunk: number, last: false, appendingTo: &output)
                }
            }
            return output
        }
        // A large piece (a 10 MiB body given whole) is sealed into one buffer with room for
        // every chunk it can complete (the one held back before it, and its own but the last),
        // each chunk where AES-GCM writes it: no regrowing, and no zeros written first.
        let capacity = (plaintext.count / SealFormat.chunkSize + 1) * SealFormat.sealedChunkSize
        guard let bytes = malloc(capacity) else { fatalError("out of memory: \(capacity) bytes") }
        var used = 0
        cutter.append(plaintext) { chunk, number in
            let size = chunk.count + SealFormat.tagSize
            precondition(used + size <= capacity, "BodySealer: a piece completed more chunks than it can")
            stream.seal(chunk, chunk: number, last: false, into: UnsafeMutableRawBufferPointer(start: bytes + used, count: size))
            used += size
        }
        return Data(bytesNoCopy: bytes, count: used, deallocator: .free)
    }

    /// Seals the final chunk (empty when the whole value is) and returns it. The sealer cannot
    /// be used after this.
    public mutating func finish() -> Data {
        precondition(!finished, "BodySealer.finish called twice")
        finished = true
        let (chunk, number) = cutter.finish()
        return stream.seal(chunk, chunk: number, last: true)
    }
}
