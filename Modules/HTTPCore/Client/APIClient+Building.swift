package import Foundation
package import HTTPTypes

extension APIClient {
    /// The endpoint as this client builds it, before any plugin or interceptor runs: base URL,
    /// path, query, default then endpoint headers, body and timeout.
    ///
    /// The offline queue stores this form, so that plugins (authentication above all) run
    /// again, with fresh credentials, when the request is replayed.
    ///
    /// - Throws: ``NetworkError/invalidRequest(_:)`` or ``NetworkError/encoding(_:)``.
    public func request(for endpoint: some Endpoint) throws(NetworkError) -> PreparedRequest {
        try makeRequest(endpoint, bodyOverride: nil)
    }

    /// The endpoint as a request: URL, query, headers, body and timeout.
    ///
    /// Most calls (the client's base URL, a path with nothing to encode) get their head from
    /// the base's parts parsed once, the path and the encoded query, as strings: no
    /// `URLComponents`, and no parse of the URL back into a head. The rest go through the URL.
    func makeRequest(_ endpoint: some Endpoint, bodyOverride: RequestBody?) throws(NetworkError) -> PreparedRequest {
        var draft: RequestDraft
        let targetPath: String?
        let path = endpoint.path
        if let base = baseHead, Self.isPlainPath(path), endpoint.baseURL == nil {
            // The common case: no `URL` is made for the base and path, which the head below
            // does without (a `URL` parse was about a tenth of a call's own cost).
            let rooted = path.hasPrefix("/") ? path : "/" + path
            draft = RequestDraft(method: endpoint.method, urlPrefix: base.urlPrefix, rest: rooted, headers: withDefaults(endpoint.headers))
            targetPath = base.path.isEmpty ? rooted : base.path + rooted
        } else {
            let target = try target(for: endpoint)
            draft = RequestDraft(method: endpoint.method, url: target.url, headers: withDefaults(endpoint.headers))
            targetPath = target.path
        }
        draft.appendQuery(endpoint.query)
        try endpoint.body.apply(to: &draft, context: EncodingContext(jsonEncoder: configuration.encoder))
        if let bodyOverride { draft.body = bodyOverride }
        let timeout = endpoint.timeout ?? configuration.timeout
        if let path = targetPath, let base = baseHead, !draft.urlReplaced {
            var pathAndQuery = path
            if !draft.percentEncodedQueryItems.isEmpty {
                pathAndQuery += "?" + draft.encodedQuery
            }
            let head = HTTPRequest(method: draft.method, scheme: base.scheme, authority: base.authority, path: pathAndQuery, headerFields: draft.headers)
            return PreparedRequest(building: head, body: draft.body, timeout: timeout, credentialFields: draft.credentialFields)
        }
        let url = try draft.resolvedURL()
        guard url.host != nil, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .invalidRequest(.malformedURL(url.absoluteString))
        }
        return PreparedRequest(
            method: draft.method, url: url, headers: draft.headers, body: draft.body,
            timeout: timeout, credentialFields: draft.credentialFields
        )
    }

    /// The client's default headers, then `headers`, which replace defaults of the same name.
    package func withDefaults(_ headers: HTTPFields) -> HTTPFields {
        if configuration.defaultHeaders.isEmpty { return headers }
        var merged = configuration.defaultHeaders
        for field in headers {
            merged[fields: field.name] = []
        }
        merged.append(contentsOf: headers)
        return merged
    }

    /// The endpoint's URL without its query items: an absolute path as it is, otherwise the
    /// endpoint's or the client's base URL with the path appended.
    func url(for endpoint: some Endpoint) throws(NetworkError) -> URL {
        try target(for: endpoint).url
    }

    /// ``url(for:)``, and, when the URL is the client's base with a simple path appended, that
    /// path as a request target (without the query items still to come).
    private func target(for endpoint: some Endpoint) throws(NetworkError) -> (url: URL, path: String?) {
        let path = endpoint.path
        // A path that starts with "/" has no scheme: skip parsing it as a URL.
        if !path.hasPrefix("/"), let absolute = URL(string: path), absolute.scheme != nil { return (absolute, nil) }
        let base = endpoint.baseURL ?? configuration.baseURL
        if let url = Self.appending(simplePath: path, to: base) {
            guard endpoint.baseURL == nil, let baseHead else { return (url, nil) }
            return (url, baseHead.path + (path.hasPrefix("/") ? "" : "/") + path)
        }
        let (pathPart, queryPart) = split(path)
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else {
            throw .invalidRequest(.malformedURL(base.absoluteString))
        }
        let encodedPath = pathPart.addingPercentEncoding(withAllowedCharacters: Self.pathAllowed) ?? pathPart
        components.percentEncodedPath = join(components.percentEncodedPath, encodedPath)
        if let queryPart, !queryPart.isEmpty {
            let existing = components.percentEncodedQuery.map { $0 + "&" } ?? ""
            components.percentEncodedQuery = existing + queryPart
        }
        guard let url = components.url else { throw .invalidRequest(.malformedURL(base.absoluteString + path)) }
        return (url, nil)
    }

    /// The fast path of ``url(for:)``, taken by most calls: a path with no query and nothing to
    /// percent-encode, appended to a base URL without query or fragment by string concatenation,
    /// which gives the same URL as the `URLComponents` path at a fraction of the cost.
    /// `nil` when the slow path is needed.
    static func appending(simplePath path: String, to base: URL) -> URL? {
        guard !path.isEmpty, path.utf8.allSatisfy(isPathByte), base.query == nil, base.fragment == nil else { return nil }
        var string = base.absoluteString
        if string.hasSuffix("/") { string.removeLast() }
        if !path.hasPrefix("/") { string.append("/") }
        string.append(path)
        return URL(string: string)
    }

    /// Whether `path`, appended to a base without query or fragment, always makes a valid URL
    /// equal to what ``appending(simplePath:to:)`` makes: not empty, only path characters and no
    /// `%` (whose escapes a URL parse would check), and not an absolute URL (no `:` unless it
    /// starts with `/`).
    static func isPlainPath(_ path: String) -> Bool {
        guard let first = path.utf8.first else { return false }
        let rooted = first == UInt8(ascii: "/")
        return path.utf8.allSatisfy { byte in
            byte != UInt8(ascii: "%") && (rooted || byte != UInt8(ascii: ":")) && isPathByte(byte)
        }
    }

    /// Whether `byte` is in ``pathAllowed`` (ASCII only).
    private static func isPathByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-._~!$&'()*+,;=:@/%".utf8.contains(byte)
        }
    }

    /// RFC 3986 `pchar` plus `/`, and `%` so paths that are already encoded stay as they are.
    private static let pathAllowed = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/%")

    private func split(_ path: String) -> (String, String?) {
        guard let mark = path.firstIndex(of: "?") else { return (path, nil) }
        return (String(path[..<mark]), String(path[path.index(after: mark)...]))
    }

    private func join(_ base: String, _ path: String) -> String {
        if path.isEmpty { return base }
        let left = base.hasSuffix("/") ? String(base.dropLast()) : base
        let right = path.hasPrefix("/") ? path : "/" + path
        return left + right
    }
}

extension HTTPRequest.Method {
    /// Whether requests with this method normally carry a body (and so a `Content-Length: 0`).
    var allowsBody: Bool { self == .post || self == .put || self == .patch }
}

extension PreparedRequest {
    /// A request as the client builds one: `Content-Length` from a body of known length (and
    /// 0 for an empty body of a method that carries one) unless the headers set it.
    package init(
        method: HTTPRequest.Method, url: URL, headers: HTTPFields, body: RequestBody?, timeout: Duration,
        credentialFields: Set<HTTPField.Name> = []
    ) {
        self.init(building: HTTPRequest(method: method, url: url, headerFields: headers), body: body, timeout: timeout, credentialFields: credentialFields)
    }

    /// The same from a head's parts, for a URL whose parts are known already.
    package init(
        method: HTTPRequest.Method, scheme: String, authority: String, path: String, headers: HTTPFields, body: RequestBody?,
        timeout: Duration, credentialFields: Set<HTTPField.Name> = []
    ) {
        self.init(
            building: HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: headers),
            body: body, timeout: timeout, credentialFields: credentialFields
        )
    }

    /// `head` with the client's `Content-Length` rule applied.
    init(building head: HTTPRequest, body: RequestBody?, timeout: Duration, credentialFields: Set<HTTPField.Name>) {
        var head = head
        if let length = body?.length, head.headerFields[.contentLength] == nil, length > 0 || head.method.allowsBody {
            head.headerFields[.contentLength] = String(length)
        }
        self.init(head: head, body: body, timeout: timeout, credentialFields: credentialFields)
    }
}

/// A base URL's scheme, authority and path (without its trailing `/`), as a request head has
/// them: parsed once per client.
struct BaseHead: Sendable {
    let scheme: String
    let authority: String
    let path: String
    /// The base URL's string without its trailing `/`, which a path is appended to.
    let urlPrefix: String

    /// `nil` for a base that is not plain `http(s)://authority/path`: one with a query, a
    /// fragment or user info, whose requests are built through the URL.
    init?(_ url: URL) {
        guard url.query == nil, url.fragment == nil, url.user == nil, url.password == nil else { return nil }
        let head = HTTPRequest(method: .get, url: url)
        guard let scheme = head.scheme, ["http", "https"].contains(scheme.lowercased()),
              let authority = head.authority, !authority.isEmpty, var path = head.path else { return nil }
        if path.hasSuffix("/") { path.removeLast() }
        var prefix = url.absoluteString
        if prefix.hasSuffix("/") { prefix.removeLast() }
        self.urlPrefix = prefix
        self.scheme = scheme
        self.authority = authority
        self.path = path
    }
}
