public import HTTPCore
public import HTTPTypes
import Foundation

/// Adds an API key, in a header or in the query (Combine Networking's API-key plugin).
///
/// ```swift
/// configuration.plugins.append(APIKeyPlugin(key: "k-123", location: .query("api_key"), scope: "weather"))
/// ```
public struct APIKeyPlugin: Plugin {
    /// Where the key goes.
    public enum Location: Sendable {
        /// A header field, such as `X-API-Key`.
        case header(HTTPField.Name)
        /// A query parameter, such as `api_key`.
        case query(String)
    }

    /// The key.
    public var key: String
    /// Where it goes.
    public var location: Location
    public var scope: PluginScope

    /// A plugin that sends `key` at `location` (an `X-API-Key` header unless given), for
    /// endpoints in `scope`.
    public init(key: String, location: Location = .header(HTTPField.Name("X-API-Key")!), scope: PluginScope = .universal) {
        self.key = key
        self.location = location
        self.scope = scope
    }

    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        switch location {
        case .header(let name):
            request.headers[name] = key
            // A name of the caller's choosing: marked, so a redirect off the origin drops it.
            request.credentialFields.insert(name)
        case .query(let name):
            let path = request.head.path ?? "/"
            let separator = path.contains("?") ? "&" : "?"
            request.head.path = path + separator + PercentEncoding.encode(name) + "=" + PercentEncoding.encode(key)
        }
        return request
    }
}

/// Adds `Authorization: Bearer <token>` with a token fetched for each call, so a rotated
/// token is picked up. For refresh on 401, use ``AuthenticationInterceptor``.
public struct BearerTokenPlugin: Plugin {
    /// Fetches the current token; throwing ends the call with `NetworkError.underlying(_:)`.
    public var token: @Sendable () async throws -> String
    public var scope: PluginScope

    /// A plugin that calls `token` once per call and sends the result as `Authorization: Bearer`,
    /// for endpoints in `scope`.
    public init(scope: PluginScope = .universal, token: @escaping @Sendable () async throws -> String) {
        self.token = token
        self.scope = scope
    }

    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        request.headers[.authorization] = "Bearer \(try await token())"
        return request
    }
}

/// Adds `Authorization: Basic <base64(user:password)>` (RFC 7617).
public struct BasicAuthPlugin: Plugin {
    private let value: String
    public var scope: PluginScope

    /// A plugin that sends `user` and `password` as `Authorization: Basic`, for endpoints in
    /// `scope`.
    public init(user: String, password: String, scope: PluginScope = .universal) {
        self.value = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        self.scope = scope
    }

    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        request.headers[.authorization] = value
        return request
    }
}
