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
    static func encode(queueID: UUID, idempotencyKey: String, keyID: KeyID, field: SealedField) -> Data {
        var data = Data([UInt8(SealFormat.version)])
        withUnsafeBytes(of: queueID.uuid) { append(Data($0), to: &data) }
        append(Data(idempotencyKey.utf8), to: &data)
        append(Data(keyID.rawValue.utf8), to: &data)
        append(Data(field.name.utf8), to: &data)
        return data
    }

    private static func append(_ part: Data, to data: inout Data) {
        withUnsafeBytes(of: UInt32(part.count).bigEndian) { data.append(contentsOf: $0) }
        data.append(part)
    }
}
