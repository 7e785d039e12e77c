public import Foundation

/// Deterministic bytes for large bodies: the byte at offset `i` depends only on `i`, so the
/// server can stream any amount without holding it, and a test can compute the checksum it
/// expects without the server's help.
public enum TestPayload {
    /// The bytes at `offset ..< offset + count`.
    public static func bytes(offset: Int, count: Int) -> [UInt8] {
        (0..<count).map { byte(at: offset + $0) }
    }

    /// The first `count` bytes as `Data`.
    public static func data(count: Int) -> Data {
        Data(bytes(offset: 0, count: count))
    }

    /// The byte at `offset`.
    public static func byte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: (offset &* 131) ^ (offset >> 9))
    }

    /// The CRC-32 of the first `count` bytes, computed in chunks of 64 KiB.
    public static func crc32(count: Int) -> UInt32 {
        var crc = CRC32()
        var offset = 0
        while offset < count {
            let length = min(64 * 1024, count - offset)
            bytes(offset: offset, count: length).withUnsafeBytes { crc.update($0) }
            offset += length
        }
        return crc.value
    }
}
