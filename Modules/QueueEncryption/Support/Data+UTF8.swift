import Foundation

extension Data {
    /// `string`'s UTF-8 appended in one copy. `append(contentsOf: string.utf8)` takes `Data`'s
    /// generic sequence path instead (a dynamic cast, then the bytes one by one); on a sealed
    /// enqueue's path, where the request's target and header lines are written out, that
    /// showed in `perf record`.
    package mutating func appendUTF8(_ string: String) {
        var string = string
        string.withUTF8 { append($0) }
    }

    /// `string`'s UTF-8 size as 32 bits big-endian, then its bytes: a length-prefixed part of
    /// a sealed value or of associated data.
    package mutating func appendLengthPrefixedUTF8(_ string: String) {
        var string = string
        string.withUTF8 { bytes in
            Swift.withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { append(contentsOf: $0) }
            append(bytes)
        }
    }
}
