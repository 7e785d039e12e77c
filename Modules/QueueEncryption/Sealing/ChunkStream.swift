import Crypto
import Foundation

/// The STREAM construction (as age uses it) over AES-256-GCM for one field of one entry: a
/// key of its own, and per chunk a 12-byte nonce made of the chunk's number (11 bytes, big
/// endian) and a last-chunk flag (1 byte: 1 on the final chunk, 0 on the others).
///
/// A nonce is never reused under a key: each field of each entry has its own key (HKDF over
/// the entry's random salt and the field's name), and within it each chunk its own number.
/// That is why the nonces can be a plain counter. The flag makes the final chunk
/// distinguishable, so a value cut after any chunk, or extended past its final one, fails.
struct ChunkStream: Sendable {
    /// The field's key, keyed once for all its chunks.
    let aead: FieldAEAD
    let associatedData: Data
    let field: SealedField

    /// Version 1's field key for `field` of the entry with `salt`, derived from the keyring key
    /// with HKDF-SHA256: the entry's salt as HKDF's salt, `courier-seal v1 field=<name>` as info.
    static func derive(from key: SymmetricKey, salt: Data, field: SealedField) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt, info: Data(infoV1(field).utf8), outputByteCount: 32)
    }

    /// Version 2's field key for `field` of the entry with `salt`: HKDF-SHA256 with
    /// ``SealFormat/keyLabel`` as HKDF's salt, and as info the label, the entry's 16-byte salt
    /// and the field's name. The extract depends on the keyring key alone, so it is made once
    /// per key (``QueueKey/expander``), not once per entry.
    static func deriveV2(from key: SymmetricKey, salt: Data, field: SealedField) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, salt: Data(SealFormat.keyLabel.utf8),
            info: Data(SealFormat.keyLabel.utf8) + salt + Data(field.name.utf8), outputByteCount: 32)
    }

    /// HKDF's extract for an entry sealed with `seal` under `key`, keyed as the HMAC that
    /// expands its field keys (``expand(_:field:seal:)``): in version 1 the entry's own
    /// extract (its salt is HKDF's salt), in versions 2 and 3 the key's, made when the key was.
    static func expander(for seal: EntrySeal, key: QueueKey) -> KeyedHMAC {
        guard seal.version == 1 else { return key.expander }
        return KeyedHMAC(key: SymmetricKey(data: HKDF<SHA256>.extract(inputKeyMaterial: key.key, salt: seal.salt)))
    }

    /// The field key for `field` of the entry with `seal`: the same key as ``derive(from:salt:field:)``
    /// (version 1) or ``deriveV2(from:salt:field:)`` (versions 2 and 3). HKDF's expand to 32 bytes,
    /// one SHA-256 block, is `HMAC(PRK, info || 0x01)` (RFC 5869, 2.3); here the HMAC keyed
    /// once (per entry in version 1, per key in versions 2 and 3) does it for each field, where
    /// `HKDF.expand` would key a new one per field and copy the output twice. The key is the
    /// digest itself, a value on the stack until it keys the field's ``FieldAEAD``.
    static func expand(_ expander: KeyedHMAC, field: SealedField, seal: EntrySeal) -> SHA256Digest {
        guard seal.version != 1 else {
            return expandInputV1(field).withUnsafeBytes { expander.mac(for: $0) }
        }
        // label ‖ salt ‖ name ‖ 0x01, written into one stack buffer.
        let label = keyLabel, salt = seal.salt, suffix = field.expandSuffix
        return withUnsafeTemporaryAllocation(byteCount: label.count + salt.count + suffix.count, alignment: 1) { buffer in
            label.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[...]).copyMemory(from: $0) }
            salt.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[label.count...]).copyMemory(from: $0) }
            suffix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[(label.count + salt.count)...]).copyMemory(from: $0) }
            return expander.mac(for: UnsafeRawBufferPointer(buffer))
        }
    }

    /// ``SealFormat/keyLabel``'s bytes, made once.
    private static let keyLabel = Data(SealFormat.keyLabel.utf8)

    /// Version 1's `info || 0x01` per field, made once.
    private static let expandInputsV1 = [SealedField.target, .headers, .body].map { ($0, Data(infoV1($0).utf8) + [1]) }

    private static func expandInputV1(_ field: SealedField) -> Data {
        expandInputsV1.first { $0.0 == field }?.1 ?? Data(infoV1(field).utf8) + [1]
    }

    /// Version 1's info: `courier-seal v1 field=` and the field's name.
    static func infoV1(_ field: SealedField) -> String {
        "courier-seal v1 field=\(field.name)"
    }

    /// The 12-byte nonce of chunk number `chunk` (with the last-chunk flag `last`), on the
    /// stack for the length of `body`.
    private static func withNonce<T>(chunk: Int, last: Bool, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        withUnsafeTemporaryAllocation(byteCount: SealFormat.nonceSize, alignment: 1) { nonce in
            nonce.initializeMemory(as: UInt8.self, repeating: 0)
            var number = UInt64(chunk)
            for index in stride(from: 10, through: 3, by: -1) {
                nonce[index] = UInt8(truncatingIfNeeded: number)
                number >>= 8
            }
            nonce[11] = last ? 1 : 0
            return body(UnsafeRawBufferPointer(nonce))
        }
    }

    /// Chunk number `chunk`, sealed: its ciphertext, then its 16-byte tag.
    func seal(_ plaintext: Data, chunk: Int, last: Bool) -> Data {
        Self.uninitializedData(count: plaintext.count + SealFormat.tagSize) { output in
            seal(plaintext, chunk: chunk, last: last, into: output)
            return true
        }!
    }

    /// Chunk number `chunk`, sealed, appended to `output`: AES-GCM writes it there (after
    /// `output` has grown by zeros, which costs a `memset`: for a chunk that starts a value,
    /// ``seal(_:chunk:last:)`` costs none).
    func seal(_ plaintext: Data, chunk: Int, last: Bool, appendingTo output: inout Data) {
        let start = output.count
        output.count += plaintext.count + SealFormat.tagSize
        output.withUnsafeMutableBytes { output in
            seal(plaintext, chunk: chunk, last: last, into: UnsafeMutableRawBufferPointer(rebasing: output[start...]))
        }
    }

    /// Chunk number `chunk`, sealed into `output`: `plaintext.count` + 16 bytes.
    func seal(_ plaintext: Data, chunk: Int, last: Bool, into output: UnsafeMutableRawBufferPointer) {
        plaintext.withUnsafeBytes { plaintext in
            associatedData.withUnsafeBytes { associatedData in
                Self.withNonce(chunk: chunk, last: last) { nonce in
                    aead.seal(plaintext, nonce: nonce, associatedData: associatedData, into: output)
                }
            }
        }
    }

    /// The plaintext of sealed chunk number `chunk`, or `nil` when it does not authenticate
    /// as that chunk with that flag.
    func open(_ sealed: Data, chunk: Int, last: Bool) -> Data? {
        guard sealed.count >= SealFormat.tagSize else { return nil }
        return Self.uninitializedData(count: sealed.count - SealFormat.tagSize) { plaintext in
            open(sealed, chunk: chunk, last: last, into: plaintext)
        }
    }

    /// Sealed chunk number `chunk` opened into `plaintext` (`sealed.count` - 16 bytes): whether
    /// it authenticates as that chunk with that flag. When it does not, `plaintext` holds
    /// nothing of it.
    func open(_ sealed: Data, chunk: Int, last: Bool, into plaintext: UnsafeMutableRawBufferPointer) -> Bool {
        sealed.withUnsafeBytes { sealed in
            associatedData.withUnsafeBytes { associatedData in
                Self.withNonce(chunk: chunk, last: last) { nonce in
                    aead.open(sealed, nonce: nonce, associatedData: associatedData, into: plaintext)
                }
            }
        }
    }

    /// Sealed chunk number `chunk`, the whole of `buffer`, opened where it lies: its plaintext
    /// is then `buffer`'s first `buffer.count` - 16 bytes. Whether it authenticates; when it
    /// does not, nothing of the plaintext is left (BoringSSL clears its output, which on
    /// Linux is the buffer itself).
    func openInPlace(_ buffer: UnsafeMutableRawBufferPointer, chunk: Int, last: Bool) -> Bool {
        guard buffer.count >= SealFormat.tagSize else { return false }
        let plaintext = UnsafeMutableRawBufferPointer(rebasing: buffer[..<(buffer.count - SealFormat.tagSize)])
        return associatedData.withUnsafeBytes { associatedData in
            Self.withNonce(chunk: chunk, last: last) { nonce in
                aead.open(UnsafeRawBufferPointer(buffer), nonce: nonce, associatedData: associatedData, into: plaintext)
            }
        }
    }

    /// `count` bytes that `write` fills, all of them, in a `Data` that owns them, or `nil` when
    /// `write` fails. Not zeroed first, as `Data(count:)` and a growing `count` are: for a body's
    /// chunks that was a `memset` of every byte before AES-GCM wrote it.
    static func uninitializedData(count: Int, _ write: (UnsafeMutableRawBufferPointer) -> Bool) -> Data? {
        guard count > 0 else { return write(UnsafeMutableRawBufferPointer(start: nil, count: 0)) ? Data() : nil }
        guard let bytes = malloc(count) else { fatalError("out of memory: \(count) bytes") }
        guard write(UnsafeMutableRawBufferPointer(start: bytes, count: count)) else {
            free(bytes)
            return nil
        }
        return Data(bytesNoCopy: bytes, count: count, deallocator: .free)
    }
}
