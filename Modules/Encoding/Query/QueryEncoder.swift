public import Foundation
public import HTTPCore

/// Encodes an `Encodable` value into query pairs (Leash's `QueryEncodable`), for a URL's
/// query or a form body.
///
/// Properties become names, sorted; `nil` properties are left out; nested values become
/// `filter[status]=open`; arrays, Booleans and dates follow ``format``. A value that has no
/// query form (NaN, infinity, a top level that is not a struct or dictionary) is
/// `NetworkError.encoding` naming its key path.
///
/// ```swift
/// struct Search: Encodable, Sendable {
///     var q: String
///     var page: Int?
///     var since: Date
///     var tags: [String]
/// }
/// let encoder = QueryEncoder(format: QueryFormat(arrays: .repeatedKeys, dates: .secondsSince1970))
/// try encoder.percentEncodedQuery(Search(q: "a b", page: nil, since: .init(timeIntervalSince1970: 0), tags: ["x", "y"]))
/// // "q=a%20b&since=0&tags=x&tags=y"
///
/// var body: RequestContent { .query(search, encoder: encoder) }
/// ```
public struct QueryEncoder: Sendable {
    /// How arrays, Booleans and dates are written.
    public var format: QueryFormat

    /// An encoder that writes values with `format`.
    public init(format: QueryFormat = QueryFormat()) {
        self.format = format
    }

    /// An encoder with the given styles.
    public init(arrays: QueryFormat.ArrayStyle = .brackets, bools: QueryFormat.BoolStyle = .numeric, dates: QueryFormat.DateStyle = .iso8601) {
        self.format = QueryFormat(arrays: arrays, bools: bools, dates: dates)
    }

    /// `value` as query items, names and values not yet percent-encoded (comma-separated
    /// arrays come as one item whose value holds the commas).
    public func queryItems(_ value: some Encodable) throws(NetworkError) -> [URLQueryItem] {
        try percentEncodedPairs(value).map { pair in
            URLQueryItem(name: pair.name.removingPercentEncoding ?? pair.name, value: pair.value.map { $0.removingPercentEncoding ?? $0 })
        }
    }

    /// `value` as a percent-encoded query, such as `page=2&q=a%20b`.
    public func percentEncodedQuery(_ value: some Encodable) throws(NetworkError) -> String {
        try percentEncodedPairs(value).joinedQuery
    }

    /// `value` as percent-encoded pairs, in order.
    func percentEncodedPairs(_ value: some Encodable) throws(NetworkError) -> [(name: String, value: String?)] {
        let root = QueryNodeBuilder()
        let encoder = QueryTreeEncoder(builder: root, format: format, codingPath: [])
        do { try encoder.write(value, into: root, path: []) } catch let error as EncodingError {
            throw .encoding(EncodingFailure(error))
        } catch let error as NetworkError {
            throw error
        } catch {
            throw .encoding(EncodingFailure(keyPath: [], message: "\(error)"))
        }
        switch root.node {
        case .map(let entries):
            return QueryNode.pairs(entries, format: format)
        case .null:
            return []
        default:
            throw .encoding(EncodingFailure(keyPath: [], message: "the top level of a query must be a struct or a dictionary, not \(type(of: value))"))
        }
    }
}

extension RequestContent {
    /// `value`'s properties appended to the URL's query.
    ///
    /// ```swift
    /// var body: RequestContent { .query(Search(q: "swift", page: 2)) }
    /// ```
    public static func query(_ value: some Encodable & Sendable, encoder: QueryEncoder = QueryEncoder()) -> RequestContent {
        RequestContent { draft, context in
            try percentEncodedQuery(encoder.percentEncodedPairs(value)).apply(to: &draft, context: context)
        }
    }

    /// `value`'s properties as a form body (`application/x-www-form-urlencoded`).
    ///
    /// ```swift
    /// var body: RequestContent { .form(Login(user: "ada", password: "p&ss")) }
    /// ```
    public static func form(_ value: some Encodable & Sendable, encoder: QueryEncoder = QueryEncoder()) -> RequestContent {
        RequestContent { draft, context in
            try percentEncodedForm(encoder.percentEncodedPairs(value)).apply(to: &draft, context: context)
        }
    }
}
