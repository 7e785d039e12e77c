#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random (version 4) UUIDs as text, from the system's cryptographic generator.
///
/// On Linux, Foundation's `UUID()` opens, reads and closes `/dev/urandom` on every call: three
/// system calls that cost more than the rest of a request ID plugin's work, or of an enqueue's
/// bookkeeping. Here the random bytes come from `arc4random_buf` (`getrandom(2)` on Linux, no
/// file), 4 KiB at a time, handed out 16 bytes per UUID under a lock: one system call per 256
/// UUIDs.
package enum RandomUUID {
    /// Random bytes not handed out yet: `bytes[next...]`.
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var next = 4096

        mutating func take() -> (UInt64, UInt64) {
            if next + 16 > bytes.count {
                bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
                next = 0
            }
            defer { next += 16 }
            return bytes.withUnsafeBytes { raw in
                (raw.loadUnaligned(fromByteOffset: next, as: UInt64.self), raw.loadUnaligned(fromByteOffset: next + 8, as: UInt64.self))
            }
        }
    }

    private static let pool = LockedBox(Pool())

    /// 36 lowercase characters, `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx` (RFC 9562, version 4).
    package static func lowercased() -> String {
        let (first, second) = pool.withLock { $0.take() }
        // Bytes 0–7 and 8–15, most significant first: the version in byte 6's high nibble, the
        // variant (binary 10) in byte 8's top bits.
        let high = first & ~0xF000 | 0x4000
        let low = second & ~(0xC0 << 56) | (0x80 << 56)
        return String(unsafeUninitializedCapacity: 36) { text in
            var position = 0
            for nibble in 0..<32 {
                // Dashes at 8, 13, 18 and 23: after 8, 12, 16 and 20 digits.
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                    text[position] = UInt8(ascii: "-")
                    position += 1
                }
                let word = nibble < 16 ? high : low
                let value = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (nibble % 16))) & 0xF
                text[position] = value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
                position += 1
            }
            return position
        }
    }
}
