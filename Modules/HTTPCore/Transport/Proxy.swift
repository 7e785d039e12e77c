public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Which HTTP proxy a request goes through: one for `http://` URLs (the request sent to the
/// proxy in absolute form), one for `https://` URLs (a `CONNECT` tunnel, TLS end to end with the
/// origin), and the hosts that go around both (`NO_PROXY`).
///
/// ```swift
/// // As curl reads it: HTTPS_PROXY, HTTP_PROXY (http_proxy), ALL_PROXY, NO_PROXY, upper or lower case.
/// let proxies = try ProxySettings(environment: ProcessInfo.processInfo.environment)
///
/// // Or in code:
/// var proxies = ProxySettings(all: try ProxyServer(url: "http://proxy.internal:3128"))
/// proxies.bypass = ProxyBypass("localhost,127.0.0.1,.internal")
/// ```
///
/// A proxy's password is never part of ``description`` or of an error's text.
public struct ProxySettings: Sendable, Hashable, CustomStringConvertible {
    /// The proxy for `http://` URLs; `nil` sends them directly.
    public var http: ProxyServer?
    /// The proxy for `https://` URLs, through `CONNECT`; `nil` sends them directly.
    public var https: ProxyServer?
    /// The hosts reached directly whatever the proxies (`NO_PROXY`).
    public var bypass: ProxyBypass

    /// `http` for `http://` URLs, `https` for `https://` URLs, `bypass` around both.
    public init(http: ProxyServer? = nil, https: ProxyServer? = nil, bypass: ProxyBypass = ProxyBypass()) {
        self.http = http
        self.https = https
        self.bypass = bypass
    }

    /// One proxy for both schemes.
    public init(all server: ProxyServer, bypass: ProxyBypass = ProxyBypass()) {
        self.init(http: server, https: server, bypass: bypass)
    }

    /// The settings of a process's environment, with curl's rules: `https_proxy` (or
    /// `HTTPS_PROXY`) for `https://` URLs, `http_proxy` (or `HTTP_PROXY`) for `http://` URLs,
    /// `all_proxy` (or `ALL_PROXY`) for either when its own is not set, `no_proxy` (or
    /// `NO_PROXY`) around them. The lower-case name wins when both are set; an empty value is
    /// not set. `nil` when no proxy is set. Throws ``ProxyError`` for a value that is not a
    /// proxy URL, naming the variable (never its password).
    public init?(environment: [String: String]) throws(ProxyError) {
        func value(_ name: String) -> (name: String, value: String)? {
            for key in [name.lowercased(), name.uppercased()] {
                if let value = environment[key]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return (key, value) }
            }
            return nil
        }
        func server(_ name: String) throws(ProxyError) -> ProxyServer? {
            guard let (key, text) = value(name) else { return nil }
            do { return try ProxyServer(url: text) } catch {
                throw ProxyError("$\(key): \(error.reason)")
            }
        }
        let all = try server("all_proxy")
        let http = try server("http_proxy") ?? all
        let https = try server("https_proxy") ?? all
        guard http != nil || https != nil else { return nil }
        self.init(http: http, https: https, bypass: ProxyBypass(value("no_proxy")?.value ?? ""))
    }

    /// The proxy a request to `url` goes through, or `nil` when it goes directly (no proxy for
    /// its scheme, or its host is in ``bypass``).
    public func server(for url: URL) -> ProxyServer? {
        guard let origin = Origin(url) else { return nil }
        return server(for: origin)
    }

    /// The proxy a request to `origin` goes through, or `nil` when it goes directly.
    public func server(for origin: Origin) -> ProxyServer? {
        let server = origin.scheme == "https" ? https : http
        guard let server, !bypass.matches(host: origin.host, port: origin.port) else { return nil }
        return server
    }

    /// The proxies and the bypass, passwords left out.
    public var description: String {
        "http: \(http?.description ?? "direct"), https: \(https?.description ?? "direct"), bypass: \(bypass.description.isEmpty ? "none" : bypass.description)"
    }
}

/// An HTTP proxy: its host and port, and the credentials it asks for (`Proxy-Authorization:
/// Basic`). Written as `http://[user[:password]@]host[:port]` (port 1080 when not named, as curl).
public struct ProxyServer: Sendable, Hashable, CustomStringConvertible {
    /// The proxy's host name or address (an IPv6 address without brackets).
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The credentials sent to the proxy, if any.
    public var credentials: ProxyCredentials?

    /// A proxy at `host:port`.
    public init(host: String, port: Int, credentials: ProxyCredentials? = nil) {
        self.host = host
        self.port = port
        self.credentials = credentials
    }

    /// The proxy of `url`: `http://[user[:password]@]host[:port]`, or `host[:port]` alone (as
    /// curl reads an environment variable); user and password percent-decoded. Throws for any
    /// other scheme (an `https://` or SOCKS proxy is not supported), a path, or a bad port.
    public init(url text: String) throws(ProxyError) {
        let written = text.contains("://") ? text : "http://\(text)"
        guard let components = URLComponents(string: written), let scheme = components.scheme?.lowercased() else {
            throw ProxyError("\(Self.redacted(text)) is not a proxy URL")
        }
        guard scheme == "http" else {
            throw ProxyError("\(Self.redacted(text)): only http:// proxies are supported (an https:// origin goes through one by CONNECT), not \(scheme)://")
        }
        guard let host = components.host, !host.isEmpty else { throw ProxyError("\(Self.redacted(text)) names no host") }
        guard components.path.isEmpty || components.path == "/", components.query == nil else {
            throw ProxyError("\(Self.redacted(text)): a proxy URL has no path or query")
        }
        let port = components.port ?? 1080
        guard (1...65535).contains(port) else { throw ProxyError("\(Self.redacted(text)): port \(port) is out of range") }
        var credentials: ProxyCredentials?
        if let user = components.percentEncodedUser {
            guard let user = user.removingPercentEncoding, let password = (components.percentEncodedPassword ?? "").removingPercentEncoding else {
                throw ProxyError("\(Self.redacted(text)): the user or password is not valid percent-encoding")
            }
            credentials = ProxyCredentials(username: user, password: password)
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.init(host: bare.lowercased(), port: port, credentials: credentials)
    }

    /// `http://user@host:port`, the password left out.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "http://\(credentials.map { "\($0.username)@" } ?? "")\(shownHost):\(port)"
    }

    /// `text` with whatever sits between `://` and the last `@` of its authority replaced by
    /// `<redacted>`: a proxy URL as it may be shown in an error.
    static func redacted(_ text: String) -> String {
        let start = text.range(of: "://")?.upperBound ?? text.startIndex
        let authorityEnd = text[start...].firstIndex(of: "/") ?? text.endIndex
        guard let at = text[start..<authorityEnd].lastIndex(of: "@") else { return text }
        return text[..<start] + "<redacted>" + text[at...]
    }
}

/// The user and password a proxy asks for. Its ``description`` shows the user only.
public struct ProxyCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The user name sent to the proxy.
    public var username: String
    /// The password sent to the proxy; never part of a description or an error.
    public var password: String

    /// The credentials `username` and `password`.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// `user:password` as one line, as in a credential file; throws when there is no `:`.
    public init(line: String) throws(ProxyError) {
        let trimmed = line.trimmingCharacters(in: .newlines)
        guard let colon = trimmed.firstIndex(of: ":"), colon != trimmed.startIndex else {
            throw ProxyError("proxy credentials are written user:password on one line")
        }
        self.init(username: String(trimmed[..<colon]), password: String(trimmed[trimmed.index(after: colon)...]))
    }

    public var description: String { "\(username):<redacted>" }
}

/// The hosts that go around the proxy, as curl reads `NO_PROXY`: a comma- (or space-) separated
/// list of
/// - `*`: every host;
/// - a host name: that host and every host under it (`example.com` and `.example.com` both
///   match `example.com` and `api.example.com`, not `notexample.com`), without case;
/// - an IP address, or an address range in CIDR form (`10.0.0.0/8`, `fd00::/8`); an IPv6
///   address may be written in brackets;
/// - any of those with `:port`, which then matches that port only.
///
/// An address in the list matches a URL that names the address, not a host name that resolves
/// to it (no lookup is made, as curl).
public struct ProxyBypass: Sendable, Hashable, CustomStringConvertible {
    enum Rule: Sendable, Hashable {
        case everything
        case domain(String, port: Int?)
        case network([UInt8], prefix: Int, port: Int?)
    }

    let rules: [Rule]
    /// The list as it was written.
    public let description: String

    /// The rules of `list`; an entry that is none of the forms above is kept as a host name
    /// (and so matches only a host spelled that way).
    public init(_ list: String = "") {
        description = list
        rules = list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).compactMap { Self.rule(String($0)) }
    }

    /// Whether a request to `host` (lowercase or not; an IPv6 address with or without brackets)
    /// on `port` goes directly.
    public func matches(host: String, port: Int) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name.removeLast() }
        let address = Self.addressBytes(name)
        for rule in rules {
            switch rule {
            case .everything:
                return true
            case .domain(let domain, let rulePort):
                guard rulePort == nil || rulePort == port else { continue }
                if name == domain || name.hasSuffix("." + domain) { return true }
            case .network(let bytes, let prefix, let rulePort):
                guard rulePort == nil || rulePort == port, let address, address.count == bytes.count else { continue }
                if Self.prefixMatches(address, bytes, bits: prefix) { return true }
            }
        }
        return false
    }

    private static func rule(_ entry: String) -> Rule? {
        var text = entry.lowercased()
        guard !text.isEmpty else { return nil }
        if text == "*" { return .everything }
        // The port: after a bracketed IPv6 address, or after the only colon of a name or IPv4.
        var port: Int?
        var prefix: Int?
        if text.hasPrefix("[") {
            // [v6], [v6]/bits, [v6]:port, [v6]/bits:port
            guard let close = text.firstIndex(of: "]") else { return .domain(text, port: nil) }
            var rest = text[text.index(after: close)...]
            if rest.hasPrefix("/") {
                let digits = rest.dropFirst().prefix(while: \.isNumber)
                prefix = Int(digits)
                rest = rest.dropFirst(1 + digits.count)
            }
            if rest.hasPrefix(":"), let number = Int(rest.dropFirst()) { port = number }
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":"), let number = Int(text[text.index(after: colon)...]) {
            port = number
            text = String(text[..<colon])
        }
        if prefix == nil, let slash = text.firstIndex(of: "/"), let bits = Int(text[text.index(after: slash)...]) {
            prefix = bits
            text = String(text[..<slash])
        }
        if let bytes = addressBytes(text) {
            let bits = min(max(prefix ?? bytes.count * 8, 0), bytes.count * 8)
            return .network(bytes, prefix: bits, port: port)
        }
        while text.hasPrefix(".") { text.removeFirst() }
        if text.hasPrefix("*.") { text.removeFirst(2) }
        if text.hasSuffix(".") { text.removeLast() }
        return text.isEmpty ? nil : .domain(text, port: port)
    }

    /// The bytes of an IPv4 or IPv6 address written as text; `nil` for a name.
    static func addressBytes(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            var storage = in6_addr()
            guard inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
            return withUnsafeBytes(of: &storage) { Array($0) }
        }
        var storage = in_addr()
        guard text.first?.isNumber == true, inet_pton(AF_INET, text, &storage) == 1 else { return nil }
        return withUnsafeBytes(of: &storage) { Array($0) }
    }

    private static func prefixMatches(_ address: [UInt8], _ network: [UInt8], bits: Int) -> Bool {
        var left = bits
        for index in address.indices where left > 0 {
            let take = min(left, 8)
            let mask: UInt8 = take == 8 ? 0xFF : ~(0xFF >> UInt8(take))
            if address[index] & mask != network[index] & mask { return false }
            left -= take
        }
        return true
    }
}

/// A proxy setting that cannot be used: what is wrong, never a password.
public struct ProxyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public let reason: String

    /// An error saying `reason`, which must not hold a password.
    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
