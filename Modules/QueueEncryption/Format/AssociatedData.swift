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
        var data = Data(capacity: 1 + 4 + 16 + 4 + idempotencyKey.utf8.count + 4 + keyID.rawValue.utf8.count + 4 + 16)
        data.append(UInt8(version))
        withUnsafeBytes(of: queueID.uuid) { uuid in
            withUnsafeBytes(of: UInt32(uuid.count).bigEndian) { data.append(contentsOf: $0) }
            data.append(contentsOf: uuid)
        }
        data.appendLengthPrefixedUTF8(idempotencyKey)
        data.appendLengthPrefixedUTF8(keyID.rawValue)
        return data
    }

    /// `prefix` (of ``prefix(version:queueID:idempotencyKey:keyID:)``) followed by `field`'s
    /// part, made once per field (``SealedField/associatedPart``).
    static func encode(prefix: Data, field: SealedField) -> Data {
        var data = Data(capacity: prefix.count + field.associatedPart.count)
        data.append(prefix)
        data.append(field.associatedPart)
        return data
    }
}
