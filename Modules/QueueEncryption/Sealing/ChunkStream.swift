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

    /// HKDF's first step for the entry with `salt` (the same for all of its fields), keyed
    /// for the second: an HMAC under the pseudorandom key, ready for ``expand(_:field:)``.
    static func expander(from key: SymmetricKey, salt: Data) -> HMAC<SHA256> {
        HMAC<SHA256>(key: SymmetricKey(data: HKDF<SHA256>.extract(inputKeyMaterial: key, salt: salt)))
    }

    /// The field key for `field`: the same key as ``derive(from:salt:field:)``. HKDF's expand
    /// to 32 bytes, one SHA-256 block, is `HMAC(PRK, info || 0x01)` (RFC 5869, 2.3); here the
    /// HMAC keyed once per entry does it for each field, where `HKDF.expand` would key a new
    /// one per field and copy the output twice.
    static func expand(_ expander: HMAC<SHA256>, field: SealedField) -> SymmetricKey {
        var hmac = expander
        hmac.update(data: expandInput(field))
        return SymmetricKey(data: hmac.finalize())
    }

    /// `info || 0x01` per field, made once.
    private static let expandInputs = [SealedField.target, .headers, .body].map { ($0, Data(info($0).utf8) + [1]) }

    private static func expandInput(_ field: SealedField) -> Data {
        expandInputs.first { $0.0 == field }?.1 ?? Data(info(field).utf8) + [1]
    }

    /// HKDF's info: the format version and the field, such as `courier-seal v1 field=body`.
    static func info(_ field: SealedField) -> String {
        "courier-seal v\(SealFormat.version) field=\(field.name)"
    }

    static func nonce(chunk: Int, last: Bool) -> AES.GCM.Nonce {
        // 12 bytes fit in `Data`'s inline storage: no allocation.
        var bytes = Data(count: 12)
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
