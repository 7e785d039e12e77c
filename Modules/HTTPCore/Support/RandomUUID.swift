/// Random (version 4) UUIDs as text, straight from the system's generator.
///
/// On Linux, Foundation's `UUID()` opens, reads and closes `/dev/urandom` on every call: three
/// system calls that cost more than the rest of a request ID plugin's work, or of an enqueue's
/// bookkeeping. `SystemRandomNumberGenerator` is `getrandom(2)` there, one call without a file.
package enum RandomUUID {
    /// 36 lowercase characters, `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx` (RFC 9562, version 4).
    package static func lowercased() -> String {
        var generator = SystemRandomNumberGenerator()
        // Bytes 0–7 and 8–15, most significant first: the version in byte 6's high nibble, the
        // variant (binary 10) in byte 8's top bits.
        let high = (generator.next() as UInt64) & ~0xF000 | 0x4000
        let low = (generator.next() as UInt64) & ~(0xC0 << 56) | (0x80 << 56)
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
