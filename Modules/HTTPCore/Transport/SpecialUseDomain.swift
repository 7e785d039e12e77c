public import HTTPTypes

/// Names that must never reach a DNS server.
///
/// RFC 6761 §6.4 asks name resolution libraries to answer names under `.invalid` negatively at
/// once; every Courier transport does, so a test (or a typo) never sends a query off the machine.
public enum SpecialUseDomain {
    /// The ``NetworkError/transport(_:)`` failure for a request whose host is under `.invalid`,
    /// or `nil` for any other request.
    public static func failure(for request: HTTPRequest) -> NetworkError? {
        guard let authority = request.authority, mayBeInvalid(authority) else { return nil }
        let host = hostName(authority)
        guard isInvalid(host) else { return nil }
        return .transport(TransportFailure(.dns, "\(host) is under the special-use domain .invalid (RFC 6761)"))
    }

    /// The host part of an authority (`host`, `host:port`, `[v6]:port`, `user@host`).
    public static func hostName(_ authority: String) -> String {
        var rest = Substring(authority)
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("[") { return String(rest.prefix { $0 != "]" }.dropFirst()) }
        return String(rest.prefix { $0 != ":" })
    }

    /// Whether `host` is `invalid` or a name under it.
    public static func isInvalid(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name == "invalid" || name.hasSuffix(".invalid")
    }

    /// A cheap pre-check that keeps string work off the common path: such an authority
    /// contains a `d` and, lowercased, "invalid".
    private static func mayBeInvalid(_ authority: String) -> Bool {
        authority.utf8.contains { $0 == UInt8(ascii: "d") || $0 == UInt8(ascii: "D") }
            && authority.lowercased().contains("invalid")
    }
}
