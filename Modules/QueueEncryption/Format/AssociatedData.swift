import Foundation

/// The associated data every chunk of a sealed value authenticates: the format version, then
/// four length-prefixed parts (a 32-bit big-endian byte count, then the bytes): the queue's
/// id (16 bytes), the entry's idempotency key (UTF-8), the key id (8 ASCII digits) and the
/// field's name (ASCII).
///
/// The queue's id and the idempotency key are what make a value belong to one entry of one
/// queue; the key is unique within a queue and known before the store assigns a row id. The
/// length prefixes keep the encoding unambiguous: no two different tuples encode alike.
enum AssociatedData {
    /// The encoding, written into one buffer of its exact size in one pass: built part by part
    /// with `Data.append`, each append's exclusivity check and bookkeeping cost more than its
    /// bytes (Docs/Benchmarks.md, *Sixth pass*).
    static func encode(version: Int, queueID: UUID, idempotencyKey: String, keyID: KeyID, field: SealedField) -> Data {
        var key = idempotencyKey, id = keyID.rawValue
        let size = 1 + (4 + 16) + (4 + key.utf8.count) + (4 + id.utf8.count) + field.associatedPart.count
        var data = Data(count: size)
        data.withUnsafeMutableBytes { (output: UnsafeMutableRawBufferPointer) -> Void in
            var offset = 0
            func put(_ bytes: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: output[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
                offset += bytes.count
            }
            func putLength(_ count: Int) {
                withUnsafeBytes(of: UInt32(count).bigEndian) { put($0) }
            }
            output[0] = UInt8(version)
            offset = 1
            putLength(16)
            withUnsafeBytes(of: queueID.uuid) { put($0) }
            key.withUTF8 { bytes in
                putLength(bytes.count)
                put(UnsafeRawBufferPointer(bytes))
            }
            id.withUTF8 { bytes in
                putLength(bytes.count)
                put(UnsafeRawBufferPointer(bytes))
            }
            field.associatedPart.withUnsafeBytes { put($0) }
        }
        return data
    }
}
