import Foundation
public import HTTPCore

/// Turns `[String: Any]` parameters into request content, as Aphrodite's and Alamofire's
/// parameter encodings do.
///
/// `[String: Any]` is not `Sendable`, so an encoding works eagerly: ``encode(_:)`` checks and
/// encodes every value at once and returns `Sendable` content that only writes bytes and
/// query pairs into the request later. A value that cannot be encoded is a
/// `NetworkError.encoding` naming its key path, never a crash.
///
/// ```swift
/// enum SearchAPI: Endpoint {
///     case search(term: String, page: Int)
///     var path: String { "/search" }
///     var method: HTTPRequest.Method { .get }
///     var body: RequestContent {
///         switch self {
///         case .search(let term, let page):
///             .parameters(["q": term, "page": page], encoding: URLEncoding.default)
///         }
///     }
/// }
/// ```
///
/// A custom encoding returns any content:
/// ```swift
/// struct PlainTextEncoding: ParameterEncoding {
///     func encode(_ parameters: [String: Any]) throws(NetworkError) -> RequestContent {
///         .text(parameters.keys.sorted().map { "\($0)=\(parameters[$0]!)" }.joined(separator: "\n"))
///     }
/// }
/// ```
public protocol ParameterEncoding: Sendable {
    /// Encodes `parameters` now into content applied when the request is built.
    ///
    /// - Throws: `NetworkError.encoding` with the key path of the first value that cannot be
    ///   encoded.
    func encode(_ parameters: [String: Any]) throws(NetworkError) -> RequestContent
}

extension RequestContent {
    /// `parameters` encoded now with `encoding`; an encoding error is kept and reported
    /// when the request is built, so a computed `Endpoint.body` need not throw.
    ///
    /// ```swift
    /// var body: RequestContent { .parameters(["name": "Ada", "tags": ["a", "b"]], encoding: JSONEncoding.default) }
    /// ```
    public static func parameters(_ parameters: [String: Any], encoding: some ParameterEncoding) -> RequestContent {
        .evaluating { () throws(NetworkError) -> RequestContent in try encoding.encode(parameters) }
    }

    /// Query parameters whose values are printable (Leash's `[String: CustomStringConvertible]`),
    /// written with `format`: Booleans, arrays, dictionaries and dates as ``QueryFormat``
    /// says, any other value with its `description`.
    ///
    /// ```swift
    /// var body: RequestContent { .query(["page": 2, "sort": "name", "desc": true]) }
    /// ```
    public static func query(_ parameters: [String: any CustomStringConvertible & Sendable], format: QueryFormat = QueryFormat()) -> RequestContent {
        let dictionary: [String: Any] = parameters.mapValues { $0 as Any }
        return .evaluating { () throws(NetworkError) -> RequestContent in
            let entries = try ParameterTree.queryNode(dictionary, format: format, describingUnknown: true)
            return .percentEncodedQuery(QueryNode.pairs(entries, format: format))
        }
    }

    /// Appends pairs that are already percent-encoded to the request's query.
    static func percentEncodedQuery(_ pairs: [(name: String, value: String?)]) -> RequestContent {
        let names = pairs.map(\.name)
        let values = pairs.map(\.value)
        return RequestContent { draft, _ in
            for index in names.indices { draft.percentEncodedQueryItems.append((names[index], values[index])) }
        }
    }

    /// A form body (`application/x-www-form-urlencoded`) made of pairs that are already
    /// percent-encoded.
    static func percentEncodedForm(_ pairs: [(name: String, value: String?)]) -> RequestContent {
        .data(Data(pairs.joinedQuery.utf8), contentType: URLEncoding.formContentType)
    }
}
