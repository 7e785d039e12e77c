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
    let key: SymmetricKey
    let associatedData: Data
    let field: SealedField

    /// The field key for `field` of the entry with `salt`, derived from the keyring key.
    static func derive(from key: SymmetricKey, salt: Data, field: SealedField) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt, info: Data(info(field).utf8), outputByteCount: 32)
    }

    /// HKDF's info: the format version and the field, such as `courier-seal v1 field=body`.
    static func info(_ field: SealedField) -> String {
        "courier-seal v\(SealFormat.version) field=\(field.name)"
    }

    static func nonce(chunk: Int, last: Bool) -> AES.GCM.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        var number = UInt64(chunk)
        for index in stride(from: 10, through: 3, by: -1) {
            bytes[index] = UInt8(truncatingIfNeeded: number)
            number >>= 8
        }
        bytes[11] = last ? 1 : 0
        // 12 bytes is AES-GCM's nonce size, the only size this initializer can refuse.
        return try! AES.GCM.Nonce(data: bytes)
    }

    /// Chunk number `chunk`, sealed: its ciphertext, then its 16-byte tag.
    func seal(_ plaintext: Data, chunk: Int, last: Bool) -> Data {
        // AES-GCM refuses only a key or nonce of the wrong size; both are fixed here.
        let box = try! AES.GCM.seal(plaintext, using: key, nonce: Self.nonce(chunk: chunk, last: last), authenticating: associatedData)
        return box.combined!.dropFirst(12)
    }

    /// The plaintext of sealed chunk number `chunk`, or `nil` when it does not authenticate
    /// as that chunk with that flag.
    func open(_ sealed: Data, chunk: Int, last: Bool) -> Data? {
        guard sealed.count >= SealFormat.tagSize,
            let box = try? AES.GCM.SealedBox(
                nonce: Self.nonce(chunk: chunk, last: last), ciphertext: sealed.dropLast(SealFormat.tagSize),
                tag: sealed.suffix(SealFormat.tagSize))
        else { return nil }
        return try? AES.GCM.open(box, using: key, authenticating: associatedData)
    }
}
