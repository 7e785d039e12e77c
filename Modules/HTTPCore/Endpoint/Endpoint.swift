public import Foundation
public import HTTPTypes

/// A description of one call, usually one case of an enum per API.
///
/// Only ``path`` and ``method`` are required; everything else has a default.
///
/// ```swift
/// enum UserAPI: Endpoint {
///     case user(id: Int)
///     case update(id: Int, UserPatch)
///
///     var path: String {
///         switch self {
///         case .user(let id), .update(let id, _): "/users/\(id)"
///         }
///     }
///     var method: HTTPRequest.Method {
///         switch self {
///         case .user: .get
///         case .update: .patch
///         }
///     }
///     var body: RequestContent {
///         switch self {
///         case .user: .none
///         case .update(_, let patch): .json(patch)
///         }
///     }
/// }
/// ```
public protocol Endpoint: Sendable {
    /// A base URL for this endpoint alone; `nil` uses the client's.
    var baseURL: URL? { get }
    /// The path, appended to the base URL's path. May contain a query (`"/search?q=x"`).
    var path: String { get }
    /// The HTTP method.
    var method: HTTPRequest.Method { get }
    /// Query items appended to the URL, percent-encoded per RFC 3986.
    var query: [URLQueryItem] { get }
    /// Header fields, added after (and replacing) the client's default headers.
    var headers: HTTPFields { get }
    /// What goes in the body (and, for parameter encodings, possibly the query).
    var body: RequestContent { get }
    /// A timeout for this endpoint alone; `nil` uses the client's.
    var timeout: Duration? { get }
    /// Which statuses count as success; others become ``NetworkError`` cases.
    var validation: StatusValidation { get }
    /// The scopes of plugins that apply to this endpoint (besides universal ones).
    var scopes: Set<PluginScope> { get }
    /// A name for logs, metrics and traces; defaults to ``defaultName``, the method and the
    /// path without its query (so secrets in the query never reach a log).
    ///
    /// The default carries the concrete path: `GET /users/42` and `GET /users/43` are two
    /// names, and a metric labelled by name (the `endpoint` label of the Plugins module's
    /// `MetricsPlugin`) gets one series per user. Give an endpoint whose path varies a name of
    /// its own, such as its route (`GET /users/{id}`). The offline queue does not keep the
    /// default: it names such an entry by the method and the origin (see "Metrics" in
    /// `Docs/OfflineQueue.md`).
    var name: String { get }
}

extension Endpoint {
    public var baseURL: URL? { nil }
    public var query: [URLQueryItem] { [] }
    public var headers: HTTPFields { [:] }
    public var body: RequestContent { .none }
    public var timeout: Duration? { nil }
    public var validation: StatusValidation { .successful }
    public var scopes: Set<PluginScope> { [] }
    public var name: String { defaultName }

    /// The name an endpoint has unless it gives its own: the method and the path without its
    /// query (`POST /users/42/avatar`). A ``name`` equal to it is taken for the default, which
    /// is how the offline queue tells a name given on purpose from one that may carry ids.
    public var defaultName: String {
        // The part before the first "?", without splitting into an array (every call asks).
        let path = self.path
        let bare = path.firstIndex(of: "?").map { path[..<$0] } ?? path[...]
        return method.rawValue + " " + bare
    }
}

/// Which response statuses an endpoint accepts.
public enum StatusValidation: Sendable, Hashable {
    /// 200–299.
    case successful
    /// Exactly these codes.
    case codes(Set<Int>)
    /// Any status; nothing is turned into an error.
    case any

    /// Whether `code` is accepted.
    public func accepts(_ code: Int) -> Bool {
        switch self {
        case .successful: (200..<300).contains(code)
        case .codes(let codes): codes.contains(code)
        case .any: true
        }
    }
}

/// A name that ties plugins to the endpoints they apply to.
///
/// A plugin whose ``Plugin/scope`` is ``PluginScope/universal`` applies to every call; one with
/// a named scope applies only to endpoints whose ``Endpoint/scopes`` contain that name, so two
/// backends can carry two different authenticators.
public struct PluginScope: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The scope's name.
    public let name: String

    /// The scope named `name`; the name `*` is `universal`.
    public init(_ name: String) { self.name = name }
    public init(stringLiteral value: String) { self.name = value }

    /// The scope every endpoint is in.
    public static let universal = PluginScope("*")

    /// Whether a plugin with this scope applies to an endpoint in `endpointScopes`.
    public func applies(to endpointScopes: Set<PluginScope>) -> Bool {
        self == .universal || endpointScopes.contains(self)
    }

    public var description: String { name }
}
