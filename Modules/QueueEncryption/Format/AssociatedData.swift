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
    static func encode(version: Int, queueID: UUID, idempotencyKey: String, keyID: KeyID, field: SealedField) -> Data {
        encode(prefix: prefix(version: version, queueID: queueID, idempotencyKey: idempotencyKey, keyID: keyID), field: field)
    }

    /// The encoding up to the field's part, which is the same for every field of an entry.
    static func prefix(version: Int, queueID: UUID, idempotencyKey: String, keyID: KeyID) -> Data {
        let key = idempotencyKey.utf8, id = keyID.rawValue.utf8
        var data = Data(capacity: 1 + 4 + 16 + 4 + key.count + 4 + id.count + 4 + 16)
        data.append(UInt8(version))
        withUnsafeBytes(of: queueID.uuid) { append($0, to: &data) }
        append(key, to: &data)
        append(id, to: &data)
        return data
    }

    /// `prefix` (of ``prefix(queueID:idempotencyKey:keyID:)``) followed by `field`'s part.
    static func encode(prefix: Data, field: SealedField) -> Data {
        var data = prefix
        append(field.name.utf8, to: &data)
        return data
    }

    private static func append(_ part: some Collection<UInt8>, to data: inout Data) {
        withUnsafeBytes(of: UInt32(part.count).bigEndian) { data.append(contentsOf: $0) }
        data.append(contentsOf: part)
    }
}
