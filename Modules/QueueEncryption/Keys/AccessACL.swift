/// A POSIX access ACL in Linux's extended-attribute form: a little-endian version (2), then
/// entries of a 16-bit tag, 16-bit permissions and 32-bit id.
struct AccessACL {
    struct Entry {
        let tag: UInt16
        let permissions: UInt16
        let id: UInt32
    }

    static let user: UInt16 = 0x02, groupObject: UInt16 = 0x04, group: UInt16 = 0x08, mask: UInt16 = 0x10

    let entries: [Entry]

    init?(_ bytes: [UInt8]) {
        func little(_ offset: Int, _ count: Int) -> UInt32 {
            (0..<count).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
        }
        guard bytes.count >= 4, (bytes.count - 4) % 8 == 0, little(0, 4) == 2 else { return nil }
        entries = stride(from: 4, to: bytes.count, by: 8).map {
            Entry(tag: UInt16(little($0, 2)), permissions: UInt16(little($0 + 2, 2)), id: little($0 + 4, 4))
        }
    }

    /// Why the ACL lets someone other than the owner and `euid` in, or `nil` when it does not.
    func unsafeReason(euid: UInt32) -> String? {
        let mask = entries.first { $0.tag == Self.mask }?.permissions ?? 0o7
        for entry in entries where entry.permissions & mask != 0 {
            switch entry.tag {
            case Self.groupObject: return "its group may read or write it (ACL); chmod 600 it"
            case Self.group: return "its ACL lets group \(entry.id) read or write it"
            case Self.user where entry.id != euid: return "its ACL lets user \(entry.id) read or write it"
            default: continue
            }
        }
        return nil
    }
}
