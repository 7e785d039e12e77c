import Foundation

/// A request as the ``TestHTTPServer`` received it: head, and the size and CRC-32 of its body
/// (the body itself is not kept, so uploads of any size cost no memory).
public struct ServerRequest: Sendable, Hashable {
    /// Which connection it came on, counted from 1; see ``TestHTTPServer/isConnectionClosed(_:)``.
    public var connectionID: Int
    /// The method, as sent.
    public var method: String
    /// The request target as sent: path and query.
    public var target: String
    /// The path, without the query.
    public var path: String
    /// The query items in order, percent-decoded.
    public var query: [QueryItem]
    /// The header fields in order, repeated names included.
    public var headers: [HeaderField]
    /// How many body bytes arrived.
    public var bodySize: Int
    /// The CRC-32 of the body.
    public var bodyCRC32: UInt32

    /// All values of the header `name` (compared case-insensitively), in order.
    public func values(of name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The first value of the query item `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// The path's components without the empty first one: `/bytes/10` is `["bytes", "10"]`.
    public var pathComponents: [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }
}

/// One header field.
public struct HeaderField: Sendable, Hashable, Codable {
    /// The name, as sent.
    public var name: String
    /// The value.
    public var value: String

    /// A field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// One query item.
public struct QueryItem: Sendable, Hashable, Codable {
    /// The percent-decoded name.
    public var name: String
    /// The percent-decoded value; `nil` for a bare name.
    public var value: String?

    /// An item.
    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}

/// What `/echo` (and most other JSON routes) answer: the request as the server saw it.
public struct EchoResponse: Sendable, Hashable, Codable {
    /// The method.
    public var method: String
    /// The path, without the query.
    public var path: String
    /// The query items in order.
    public var query: [QueryItem]
    /// The header fields in order.
    public var headers: [HeaderField]
    /// The body's size in bytes.
    public var bodySize: Int
    /// The body's CRC-32.
    public var bodyCRC32: UInt32

    /// The echo of `request`.
    public init(_ request: ServerRequest) {
        method = request.method
        path = request.path
        query = request.query
        headers = request.headers
        bodySize = request.bodySize
        bodyCRC32 = request.bodyCRC32
    }

    /// All values of the header `name` (compared case-insensitively), in order.
    public func values(of name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
}
