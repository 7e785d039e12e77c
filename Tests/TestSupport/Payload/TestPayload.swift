public import Foundation

/// Deterministic bytes for large bodies: the byte at offset `i` depends only on `i`, so the
/// server can stream any amount without holding it, and a test can compute the checksum it
/// expects without the server's help.
///
/// The bytes repeat with a prime period (65,521), so no power-of-two chunking lines up with
/// it, and making any range is a few `memcpy`s from one precomputed period. That matters: a
/// byte-by-byte generator in a debug build cost 270 ns a byte (2.9 s for 10 MiB), and that
/// work ran on the two threads of the cooperative pool, starving every other test in the
/// process (the in-process server included) until their deadlines passed.
public enum TestPayload {
    /// The length after which the bytes repeat.
    public static let period = 65_521

    private static let pattern: [UInt8] = (0..<period).map { UInt8(truncatingIfNeeded: ($0 &* 131) ^ ($0 >> 9)) }

    /// The bytes at `offset ..< offset + count`.
    public static func bytes(offset: Int, count: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        var position = offset % period
        while result.count < count {
            let take = min(count - result.count, period - position)
            result.append(contentsOf: pattern[position..<(position + take)])
            position = 0
        }
        return result
    }

    /// The first `count` bytes as `Data`.
    public static func data(count: Int) -> Data {
        Data(bytes(offset: 0, count: count))
    }

    /// The byte at `offset`.
    public static func byte(at offset: Int) -> UInt8 {
        pattern[offset % period]
    }

    /// `count` bytes of the sequence that repeats `period`, from offset `offset` in it: byte `i`
    /// is `period[(offset + i) % period.count]`. Any byte formula with a short period (`i % 251`,
    /// `i &* 31 &+ seed` as a `UInt8`, whose period is 256) made this way costs a few `memcpy`s,
    /// where `(0..<count).map { … }` in a debug build costs hundreds of nanoseconds a byte on the
    /// cooperative pool.
    public static func periodic(_ period: [UInt8], offset: Int = 0, count: Int) -> Data {
        precondition(!period.isEmpty)
        var result = Data(capacity: count)
        var position = offset % period.count
        while result.count < count {
            let take = min(count - result.count, period.count - position)
            period.withUnsafeBufferPointer { result.append(UnsafeBufferPointer(rebasing: $0[position..<(position + take)])) }
            position = 0
        }
        return result
    }

    /// The period of `UInt8(truncatingIfNeeded: i &* multiplier &+ addend)`: its 256 bytes (the
    /// byte depends on `i % 256` alone).
    public static func affinePeriod(multiplier: Int, addend: Int = 0) -> [UInt8] {
        (0..<256).map { UInt8(truncatingIfNeeded: $0 &* multiplier &+ addend) }
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
