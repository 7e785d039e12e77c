package import Foundation

extension UUID {
    /// All zero bits: the id of a queue that has none (a file older than schema 9).
    package static let zero: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// A UUID from its 16 bytes in RFC 4122 order.
    package init(bytes: Data) {
        var raw = UUID.zero
        withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: bytes.prefix(16)) }
        self.init(uuid: raw)
    }
}
