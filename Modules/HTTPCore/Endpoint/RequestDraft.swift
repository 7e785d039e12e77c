public import Foundation
public import HTTPTypes

/// A request being built from an endpoint, before plugins see it.
///
/// ``RequestContent`` writes into a draft: a body, a content type, query items. The client then
/// turns the draft into a ``PreparedRequest``.
public struct RequestDraft: Sendable {
    /// The HTTP method.
    public var method: HTTPRequest.Method
    /// The URL without the query that `queryItems` adds.
    public var url: URL {
        get { storedURL ?? URL(string: deferredURL.prefix + deferredURL.rest)! }
        set {
            storedURL = newValue
            urlReplaced = true
        }
    }
    /// The URL when it was given as one (or set since).
    private var storedURL: URL?
    /// The URL as two strings that, joined, are known to parse, for a draft the client made from
    /// its base URL and a simple path: most requests never need the `URL`, so it is neither
    /// joined nor parsed until read.
    private var deferredURL: (prefix: String, rest: String) = ("", "")
    /// Whether ``url`` was set after the draft was made (by a ``RequestContent``).
    private(set) var urlReplaced = false
    /// Query pairs, already percent-encoded, appended in order after any query in ``url``.
    public var percentEncodedQueryItems: [(name: String, value: String?)]
    /// Header fields.
    public var headers: HTTPFields
    /// The body, if any.
    public var body: RequestBody?
    /// Header fields that carry credentials besides the client's set (see
    /// ``PreparedRequest/credentialFields``).
    public var credentialFields: Set<HTTPField.Name> = []

    /// A draft of a `method` request to `url`, with `headers` and `body`, and no query items
    /// added yet.
    public init(method: HTTPRequest.Method, url: URL, headers: HTTPFields = [:], body: RequestBody? = nil) {
        self.method = method
        self.storedURL = url
        self.percentEncodedQueryItems = []
        self.headers = headers
        self.body = body
    }

    /// A draft whose URL is `prefix` followed by `rest`, which must parse as a URL; joined and
    /// parsed only when read.
    init(method: HTTPRequest.Method, urlPrefix prefix: String, rest: String, headers: HTTPFields) {
        self.method = method
        self.deferredURL = (prefix, rest)
        self.percentEncodedQueryItems = []
        self.headers = headers
        self.body = nil
    }

    /// Appends query items, percent-encoding names and values per RFC 3986.
    public mutating func appendQuery(_ items: [URLQueryItem]) {
        for item in items {
            percentEncodedQueryItems.append((
                PercentEncoding.encode(item.name),
                item.value.map(PercentEncoding.encode)
            ))
        }
    }

    /// Sets `Content-Type` unless the endpoint's own headers already set one.
    public mutating func setContentType(_ value: String) {
        if headers[.contentType] == nil { headers[.contentType] = value }
    }

    /// ``percentEncodedQueryItems`` as a query string, `name=value` pairs joined by `&`.
    var encodedQuery: String {
        percentEncodedQueryItems
            .map { item in item.value.map { "\(item.name)=\($0)" } ?? item.name }
            .joined(separator: "&")
    }

    /// The final URL: ``url`` with ``percentEncodedQueryItems`` appended.
    public func resolvedURL() throws(NetworkError) -> URL {
        guard !percentEncodedQueryItems.isEmpty else { return url }
        let extra = encodedQuery
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw .invalidRequest(.malformedURL(url.absoluteString))
        }
        let existing = components.percentEncodedQuery.map { $0.isEmpty ? "" : $0 + "&" } ?? ""
        components.percentEncodedQuery = existing + extra
        guard let resolved = components.url else { throw .invalidRequest(.malformedURL(url.absoluteString)) }
        return resolved
    }
}

/// Percent-encoding of query components per RFC 3986: everything but the unreserved
/// characters (`A–Z a–z 0–9 - . _ ~`) is encoded, so `+`, `&`, `=` and `/` survive any server.
public enum PercentEncoding {
    private static let unreserved: Set<UInt8> = Set(
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    )

    /// `string` with every byte outside the unreserved set written as `%XX`.
    public static func encode(_ string: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            if unreserved.contains(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
