public import Foundation
public import HTTPTypes

/// An ad-hoc call whose result type is part of its type.
///
/// ```swift
/// let user = try await client.send(Request<User>.get("/users/42")).body
/// try await client.send(Request<Void>.delete("/posts/7"))
/// extension Request where Response == Post {
///     static func createPost(_ post: NewPost) -> Self { .post("/posts", body: post) }
/// }
/// ```
public struct Request<Response>: Endpoint {
    public var method: HTTPRequest.Method
    /// A path relative to the client's base URL, or an absolute URL string.
    public var path: String
    public var query: [URLQueryItem]
    public var headers: HTTPFields
    public var body: RequestContent
    public var timeout: Duration?
    public var validation: StatusValidation
    public var scopes: Set<PluginScope>
    /// A decoder for this request alone; `nil` uses the client's.
    public var decoder: JSONDecoder?

    /// A request with `method` and `path`. Unless given: no query, header fields or body, the
    /// client's timeout and decoder, 2xx statuses accepted, and no plugin scopes.
    public init(
        method: HTTPRequest.Method,
        path: String,
        query: [URLQueryItem] = [],
        headers: HTTPFields = [:],
        body: RequestContent = .none,
        timeout: Duration? = nil,
        validation: StatusValidation = .successful,
        scopes: Set<PluginScope> = [],
        decoder: JSONDecoder? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.validation = validation
        self.scopes = scopes
        self.decoder = decoder
    }

    /// A `GET` of `path`, with `query` items and `headers`.
    public static func get(_ path: String, query: [URLQueryItem] = [], headers: HTTPFields = [:]) -> Request {
        Request(method: .get, path: path, query: query, headers: headers)
    }

    /// A `HEAD` of `path`, with `query` items and `headers`.
    public static func head(_ path: String, query: [URLQueryItem] = [], headers: HTTPFields = [:]) -> Request {
        Request(method: .head, path: path, query: query, headers: headers)
    }

    /// A `DELETE` of `path`, with `query` items and `headers`.
    public static func delete(_ path: String, query: [URLQueryItem] = [], headers: HTTPFields = [:]) -> Request {
        Request(method: .delete, path: path, query: query, headers: headers)
    }

    /// A `POST` to `path` with `body` (none unless given) and `headers`.
    public static func post(_ path: String, body: RequestContent = .none, headers: HTTPFields = [:]) -> Request {
        Request(method: .post, path: path, headers: headers, body: body)
    }

    /// A `PUT` to `path` with `body` (none unless given) and `headers`.
    public static func put(_ path: String, body: RequestContent = .none, headers: HTTPFields = [:]) -> Request {
        Request(method: .put, path: path, headers: headers, body: body)
    }

    /// A `PATCH` to `path` with `body` (none unless given) and `headers`.
    public static func patch(_ path: String, body: RequestContent = .none, headers: HTTPFields = [:]) -> Request {
        Request(method: .patch, path: path, headers: headers, body: body)
    }

    /// A `POST` to `path` with `body` encoded as JSON by the client's encoder.
    public static func post<Body: Encodable & Sendable>(_ path: String, body: Body, headers: HTTPFields = [:]) -> Request {
        .post(path, body: .json(body), headers: headers)
    }

    /// A `PUT` to `path` with `body` encoded as JSON by the client's encoder.
    public static func put<Body: Encodable & Sendable>(_ path: String, body: Body, headers: HTTPFields = [:]) -> Request {
        .put(path, body: .json(body), headers: headers)
    }

    /// A `PATCH` to `path` with `body` encoded as JSON by the client's encoder.
    public static func patch<Body: Encodable & Sendable>(_ path: String, body: Body, headers: HTTPFields = [:]) -> Request {
        .patch(path, body: .json(body), headers: headers)
    }
}

extension Request: Sendable {}
