import Crypto
import Foundation

/// HMAC-SHA256 under one key, keyed once (RFC 2104): swift-crypto's `SHA256` states after the
/// key's inner and outer pads. A MAC is then a copy of each state, the message fed to the inner
/// one as one buffer, and the inner digest to the outer one.
///
/// It computes exactly what `HMAC<SHA256>` does (`KeyedHMACTests` compares them, and the
/// known-answer tests hold the field keys it expands). It exists because `HMAC.update(data:)`
/// is generic over `DataProtocol`, and from outside swift-crypto that costs a walk of the
/// data's regions through generic metadata on every call: in `perf record` of a sealed
/// enqueue, that walk was a third of a field key's derivation.
struct KeyedHMAC: Sendable {
    private let inner: SHA256
    private let outer: SHA256

    /// SHA-256's block size: a key is padded (or, longer, hashed) to it.
    private static let blockSize = 64

    init(key: SymmetricKey) {
        var inner = SHA256(), outer = SHA256()
        withUnsafeTemporaryAllocation(byteCount: 2 * Self.blockSize, alignment: 1) { pads in
            pads.initializeMemory(as: UInt8.self, repeating: 0)
            let innerPad = UnsafeMutableRawBufferPointer(rebasing: pads[..<Self.blockSize])
            let outerPad = UnsafeMutableRawBufferPointer(rebasing: pads[Self.blockSize...])
            key.withUnsafeBytes { key in
                if key.count > Self.blockSize {
                    var hasher = SHA256()
                    hasher.update(bufferPointer: key)
                    hasher.finalize().withUnsafeBytes { innerPad.copyMemory(from: $0) }
                } else {
                    innerPad.copyMemory(from: key)
                }
            }
            for index in 0..<Self.blockSize {
                let byte = innerPad[index]
                innerPad[index] = byte ^ 0x36
                outerPad[index] = byte ^ 0x5c
            }
            inner.update(bufferPointer: UnsafeRawBufferPointer(innerPad))
            outer.update(bufferPointer: UnsafeRawBufferPointer(outerPad))
            // Cleared before the stack gives the buffer back (the two states keep what the
            // pads made of the key, as `HMAC`'s do).
            pads.initializeMemory(as: UInt8.self, repeating: 0)
        }
        self.inner = inner
        self.outer = outer
    }

    /// The MAC of `message`.
    func mac(for message: UnsafeRawBufferPointer) -> SHA256Digest {
        var inner = self.inner
        inner.update(bufferPointer: message)
        var outer = self.outer
        inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize()
    }

    /// The MAC of `message`, as the 32-byte key it serves as.
    func key(for message: UnsafeRawBufferPointer) -> SymmetricKey {
        SymmetricKey(data: mac(for: message))
    }
}
