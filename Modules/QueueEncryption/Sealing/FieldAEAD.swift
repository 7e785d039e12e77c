import Crypto
import Foundation
#if os(Linux)
import CSealAEAD
#endif

/// One field's AES-256-GCM key, keyed once, that seals and opens its chunks on buffers the
/// caller owns: the ciphertext is written where it is stored, the plaintext where it is used.
///
/// On Linux it calls the BoringSSL that swift-crypto links (through CSealAEAD), since the
/// generic `AES.GCM.seal`/`open` over `DataProtocol` cost several times the cipher for a field
/// of an entry: a `SealedBox` whose combined bytes are copied twice, the nonce and key
/// wrapped, generic metadata looked up on every call, and a context keyed per call, where a
/// body's chunks share one here (Docs/Benchmarks.md, *Fifth pass*). Elsewhere it is
/// `AES.GCM`. Both write the same bytes: `FieldAEADTests` compares them, and the known-answer
/// tests hold the format.
final class FieldAEAD: @unchecked Sendable {
    // Sendable: the context is keyed once in `init` and only read after it (BoringSSL's
    // seal and open take it `const`), and freed in `deinit`.
    #if os(Linux)
    private let context: OpaquePointer

    /// A context for the 32 bytes of `key`.
    init(key: UnsafeRawBufferPointer) {
        precondition(key.count == SealFormat.keySize, "a field key has \(SealFormat.keySize) bytes")
        // BoringSSL refuses only a key of the wrong size (checked above), or fails to allocate.
        guard let context = csa_aes256gcm_new(key.baseAddress!.assumingMemoryBound(to: UInt8.self)) else {
            fatalError("AES-256-GCM: cannot allocate a context")
        }
        self.context = context
    }

    deinit {
        csa_free(context)
    }
    #else
    private let key: SymmetricKey

    init(key: UnsafeRawBufferPointer) {
        precondition(key.count == SealFormat.keySize, "a field key has \(SealFormat.keySize) bytes")
        self.key = SymmetricKey(data: key)
    }
    #endif

    /// `plaintext` sealed under the 12-byte `nonce`, authenticating `associatedData`, into
    /// `output`: exactly `plaintext.count` + 16 bytes, the ciphertext then the tag.
    func seal(_ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count == plaintext.count + SealFormat.tagSize && nonce.count == SealFormat.nonceSize)
        #if os(Linux)
        let sealed = Self.pointer(plaintext) { input in
            csa_seal(context, Self.bytes(output), Self.bytes(nonce), input, plaintext.count, Self.bytes(associatedData), associatedData.count)
        }
        // Fails only for sizes out of range, which the precondition rules out.
        precondition(sealed == 1, "AES-256-GCM: sealing failed")
        #else
        // A nonce of 12 bytes and a key of 32 are all this can refuse.
        let box = try! AES.GCM.seal(plaintext, using: key, nonce: try! AES.GCM.Nonce(data: nonce), authenticating: associatedData)
        box.ciphertext.withUnsafeBytes { output.copyMemory(from: $0) }
        box.tag.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: output[plaintext.count...]).copyMemory(from: $0) }
        #endif
    }

    /// `sealed` (ciphertext then 16-byte tag, at least the tag) opened under the 12-byte `nonce`
    /// with `associatedData` into `output` (`sealed.count` - 16 bytes): `true` when it
    /// authenticates. When it does not, `output` holds nothing of the plaintext.
    func open(_ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(sealed.count >= SealFormat.tagSize && output.count == sealed.count - SealFormat.tagSize && nonce.count == SealFormat.nonceSize)
        #if os(Linux)
        return Self.mutablePointer(output) { out in
            csa_open(context, out, Self.bytes(nonce), Self.bytes(sealed), sealed.count, Self.bytes(associatedData), associatedData.count)
        } == 1
        #else
        let tagStart = sealed.count - SealFormat.tagSize
        guard let box = try? AES.GCM.SealedBox(
                nonce: try! AES.GCM.Nonce(data: nonce), ciphertext: UnsafeRawBufferPointer(rebasing: sealed[..<tagStart]),
                tag: UnsafeRawBufferPointer(rebasing: sealed[tagStart...])),
            let plaintext = try? AES.GCM.open(box, using: key, authenticating: associatedData)
        else { return false }
        plaintext.withUnsafeBytes { output.copyMemory(from: $0) }
        return true
        #endif
    }

    #if os(Linux)
    /// The first byte of `buffer`, which is not empty.
    private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
    }

    private static func bytes(_ buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<UInt8> {
        buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
    }

    /// `buffer`'s first byte, or, for an empty buffer without an address (an empty final
    /// chunk), a stand-in: BoringSSL is never given a null pointer.
    private static func pointer(_ buffer: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>) -> Int32) -> Int32 {
        if let base = buffer.baseAddress { return body(base.assumingMemoryBound(to: UInt8.self)) }
        return withUnsafePointer(to: UInt8(0), body)
    }

    private static func mutablePointer(_ buffer: UnsafeMutableRawBufferPointer, _ body: (UnsafeMutablePointer<UInt8>) -> Int32) -> Int32 {
        if let base = buffer.baseAddress { return body(base.assumingMemoryBound(to: UInt8.self)) }
        var byte: UInt8 = 0
        return withUnsafeMutablePointer(to: &byte, body)
    }
    #endif
}
