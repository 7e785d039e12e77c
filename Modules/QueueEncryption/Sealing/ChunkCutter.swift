import Foundation

/// Cuts bytes that arrive in pieces of any size into chunks of a fixed size, holding the
/// latest chunk back until more bytes arrive: only at the end is it known to be the final one.
/// The sealer cuts plaintext with it, the opener sealed bytes.
struct ChunkCutter: Sendable {
    let size: Int
    /// At most `size` bytes: the chunk held back.
    private var held = Data()
    /// The number of the held chunk, counting from 0.
    private(set) var number = 0

    init(size: Int) {
        self.size = size
    }

    /// Adds `bytes`; calls `complete` with each chunk that more bytes now follow, and its
    /// number, in order.
    mutating func append<Failure: Error>(_ bytes: Data, _ complete: (Data, Int) throws(Failure) -> Void) throws(Failure) {
        var input = bytes
        while !input.isEmpty {
            if held.count == size {
                try complete(held, number)
                number += 1
                held = Data()
            }
            let piece = input.prefix(size - held.count)
            if held.isEmpty { held = piece } else { held.append(piece) }
            input = input.dropFirst(piece.count)
        }
    }

    /// The final chunk (empty when no bytes came at all) and its number.
    mutating func finish() -> (Data, Int) {
        defer { held = Data() }
        return (held, number)
    }
}
