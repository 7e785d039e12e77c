public import Foundation
public import NIOCore

/// CRC-32 (IEEE 802.3, the one gzip and zlib use), computed incrementally so bodies of any size
/// can be checked without holding them in memory.
///
/// ```swift
/// var crc = CRC32()
/// crc.update(Data("123456789".utf8))
/// crc.value // 0xCBF43926
/// ```
public struct CRC32: Sendable, Hashable {
    /// The checksum of everything added so far.
    public var value: UInt32 { ~state }
    private var state: UInt32 = 0xFFFF_FFFF

    /// An empty checksum.
    public init() {}

    /// Adds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var crc = state
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes {
                crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
        }
        state = crc
    }

    /// Adds `data`.
    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Adds the readable bytes of `buffer`.
    public mutating func update(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { update($0) }
    }

    /// The checksum of `data`.
    public static func checksum(_ data: Data) -> UInt32 {
        var crc = CRC32()
        crc.update(data)
        return crc.value
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var c = UInt32(index)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}
