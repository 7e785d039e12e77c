public import Foundation

/// Where a credential may go: a scheme, a host and an effective port (RFC 6454).
///
/// `https://api.example.com`, `https://API.example.com:443/x` and `https://api.example.com/`
/// are one origin; `http://api.example.com` and `https://api.example.com:8443` are others.
///
/// ```swift
/// let origin = try #require(Origin(URL(string: "https://api.example.com/v1/users")!))
/// origin.description       // "https://api.example.com"
/// Origin("http://127.0.0.1:8080")?.isLoopback   // true
/// ```
public struct Origin: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`, lowercased.
    public let scheme: String
    /// The host, lowercased, without brackets for IPv6.
    public let host: String
    /// The port, the scheme's default when the URL names none.
    public let port: Int

    /// The origin of `url`; `nil` for a URL that is not absolute http or https.
    public init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let port = Self.defaultPort(scheme),
              let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = url.port ?? port
    }

    /// The origin written as `scheme://host[:port]` (a path is ignored).
    public init?(_ text: String) {
        guard let url = URL(string: text) else { return nil }
        self.init(url)
    }

    /// The origin of a request's scheme and authority (`host`, `host:port`, `[v6]:port`), as
    /// `HTTPRequest` holds them; `nil` when either is missing or not http(s). Parses in place.
    package init?(scheme: String?, authority: String?) {
        guard let scheme = scheme?.lowercased(), let defaultPort = Self.defaultPort(scheme), let authority else { return nil }
        var rest = Substring(authority)
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        var host: Substring
        var port = defaultPort
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let tail = rest[rest.index(after: close)...]
            if tail.hasPrefix(":") {
                guard let number = Int(tail.dropFirst()) else { return nil }
                port = number
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            guard let number = Int(rest[rest.index(after: colon)...]) else { return nil }
            port = number
        } else {
            host = rest
        }
        guard !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
    }

    /// Whether requests to this origin never leave the machine: `localhost`, 127.0.0.0/8 or `::1`.
    public var isLoopback: Bool {
        host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host.hasPrefix("127.")
    }

    /// Whether the exchange is encrypted (`https`).
    public var isSecure: Bool { scheme == "https" }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return Self.defaultPort(scheme) == port ? "\(scheme)://\(shownHost)" : "\(scheme)://\(shownHost):\(port)"
    }

    private static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }
}

extension URL {
    /// The URL as text with the password of its user info, if any, replaced by `<redacted>`:
    /// for errors and logs, which must never carry a credential.
    public var redactingPassword: String {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: true), components.password != nil else {
            return absoluteString
        }
        components.password = "<redacted>"
        return components.string ?? absoluteString
    }
}
