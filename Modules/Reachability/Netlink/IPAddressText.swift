#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Conversions between IP addresses in text and their bytes (`inet_pton`, `inet_ntop`).
enum IPAddressText {
    /// The family and network-order bytes of `text`, or `nil` when it is not an address.
    static func parse(_ text: String) -> (AddressFamily, [UInt8])? {
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 { return (.ipv4, v4) }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, text, &v6) == 1 { return (.ipv6, v6) }
        return nil
    }

    /// `bytes` (4 or 16 of them) as text, or `nil` for any other length.
    static func format(_ bytes: [UInt8]) -> String? {
        let family: Int32
        switch bytes.count {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        var text = [CChar](repeating: 0, count: 64)
        guard inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
