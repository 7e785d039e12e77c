import AsyncHTTPClient
import NIOHTTPCompression

/// How far a body this transport decodes itself (`br`) may expand: the limit of
/// ``AsyncHTTPClientTransport/Configuration/decompression``, which AsyncHTTPClient applies to
/// gzip and deflate.
enum DecodingLimit: Sendable, Equatable {
    case none
    /// At most this many decoded bytes.
    case size(Int)
    /// At most this many decoded bytes per encoded byte received so far.
    case ratio(Int)

    /// NIO's limit as a value. `DecompressionLimit` keeps its case internal, so it is read
    /// through reflection; a limit that cannot be read (a later NIO that stores it otherwise)
    /// is the default ratio of 25, never none.
    init(_ limit: NIOHTTPDecompression.DecompressionLimit) {
        let text = Mirror(reflecting: limit).children.first.map { String(describing: $0.value) } ?? ""
        func number(after prefix: String) -> Int? {
            guard text.hasPrefix(prefix + "("), text.hasSuffix(")") else { return nil }
            return Int(text.dropFirst(prefix.count + 1).dropLast())
        }
        if text == "none" {
            self = .none
        } else if let size = number(after: "size") {
            self = .size(size)
        } else {
            self = .ratio(number(after: "ratio") ?? 25)
        }
    }

    /// Whether `decoded` bytes out of `encoded` bytes in are past the limit.
    func isExceeded(encoded: Int, decoded: Int) -> Bool {
        switch self {
        case .none: false
        case .size(let allowed): decoded > allowed
        case .ratio(let ratio): decoded > ratio * max(encoded, 1)
        }
    }
}
