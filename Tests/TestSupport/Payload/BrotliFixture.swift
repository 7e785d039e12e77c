#if Brotli
import CBrotli
public import Foundation

/// Brotli-encoded bodies for the tests' servers (`Content-Encoding: br`), made with Debian's
/// libbrotli encoder (the package trait `Brotli`).
public enum BrotliFixture {
    /// `data` brotli-encoded at `quality` (0 to 11).
    public static func compress(_ data: Data, quality: Int32 = 5) -> Data {
        var size = BrotliEncoderMaxCompressedSize(data.count)
        var output = Data(count: max(size, 64))
        size = output.count
        let ok = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                BrotliEncoderCompress(
                    quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, data.count,
                    input.bindMemory(to: UInt8.self).baseAddress, &size, out.bindMemory(to: UInt8.self).baseAddress
                )
            }
        }
        precondition(ok == BROTLI_TRUE, "brotli could not encode \(data.count) bytes")
        output.count = size
        return output
    }

    /// `count` bytes of text that compresses as prose does (about 3 to 1, within a decoder's
    /// ratio limit of 25): words picked by a fixed pseudo-random sequence.
    public static func text(_ count: Int) -> Data {
        let words = ["queue", "entry", "origin", "proxy", "deliver", "network", "retry", "backoff", "lease", "drain",
                     "sealed", "keyring", "probe", "circuit", "health", "brotli", "tunnel", "certificate", "trust", "fleet"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var data = Data(capacity: count + 16)
        while data.count < count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let word = words[Int(state >> 59) % words.count]
            data.append(contentsOf: "\(word)\(state >> 48 & 0xFF) ".utf8)
        }
        return data.prefix(count)
    }

    /// 64 MiB of zeros, brotli-encoded: a few dozen bytes that expand a million times.
    public static let bomb = compress(Data(count: 64 << 20), quality: 9)
}
#endif
