public import HTTPCore
public import HTTPTypes

/// Encodes parameters as `name=value` pairs, in the URL's query or in a form body
/// (`application/x-www-form-urlencoded`), like Alamofire's `URLEncoding`.
///
/// Keys are sorted, so the same parameters always give the same query. Names and values are
/// percent-encoded per RFC 3986; arrays, Booleans and dates follow ``format``; nested
/// dictionaries become `user[name]=Ada`; `nil` and `NSNull` values are left out.
///
/// ```swift
/// var body: RequestContent { .parameters(["q": "swift nio", "tags": ["a", "b"]], encoding: URLEncoding.default) }
/// // GET:  /search?q=swift%20nio&tags%5B%5D=a&tags%5B%5D=b
/// // POST: body q=swift%20nio&tags%5B%5D=a&tags%5B%5D=b
///
/// let repeated = URLEncoding(destination: .queryString, format: QueryFormat(arrays: .repeatedKeys))
/// ```
public struct URLEncoding: ParameterEncoding {
    /// Where the pairs go.
    public enum Destination: Sendable, Hashable {
        /// The query for GET, HEAD and DELETE; a form body for every other method.
        case methodDependent
        /// Always the URL's query.
        case queryString
        /// Always a form body.
        case httpBody
    }

    /// Where the pairs go.
    public var destination: Destination
    /// How arrays, Booleans and dates are written.
    public var format: QueryFormat

    /// An encoding to `destination` with `format`.
    public init(destination: Destination = .methodDependent, format: QueryFormat = QueryFormat()) {
        self.destination = destination
        self.format = format
    }

    /// Method-dependent, with the default format.
    public static let `default` = URLEncoding()
    /// Always in the query, with the default format.
    public static let queryString = URLEncoding(destination: .queryString)
    /// Always a form body, with the default format.
    public static let httpBody = URLEncoding(destination: .httpBody)

    /// The `Content-Type` of form bodies.
    public static let formContentType = "application/x-www-form-urlencoded; charset=utf-8"

    /// `parameters` as pairs, placed in the query or a form body when the request is built
    /// (for ``Destination/methodDependent``, by the request's method). No parameters, no change.
    public func encode(_ parameters: [String: Any]) throws(NetworkError) -> RequestContent {
        let pairs = QueryNode.pairs(try ParameterTree.queryNode(parameters, format: format), format: format)
        let query = RequestContent.percentEncodedQuery(pairs)
        let form = RequestContent.percentEncodedForm(pairs)
        let destination = destination
        return RequestContent { draft, context in
            if pairs.isEmpty { return }
            if destination.usesQuery(for: draft.method) {
                try query.apply(to: &draft, context: context)
            } else {
                try form.apply(to: &draft, context: context)
            }
        }
    }

    /// The percent-encoded query `parameters` make, such as `page=2&q=swift%20nio`.
    public func percentEncodedQuery(_ parameters: [String: Any]) throws(NetworkError) -> String {
        QueryNode.pairs(try ParameterTree.queryNode(parameters, format: format), format: format).joinedQuery
    }
}

extension URLEncoding.Destination {
    /// Whether pairs for a request with `method` go in the query.
    public func usesQuery(for method: HTTPRequest.Method) -> Bool {
        switch self {
        case .methodDependent: method == .get || method == .head || method == .delete
        case .queryString: true
        case .httpBody: false
        }
    }
}
