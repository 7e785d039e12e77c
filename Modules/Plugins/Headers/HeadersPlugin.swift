public import HTTPCore
public import HTTPTypes

/// Adds fixed header fields to every request in its scope (Combine Networking's request
/// modifier).
///
/// ```swift
/// configuration.plugins.append(HeadersPlugin([.accept: "application/json", HTTPField.Name("X-Client")!: "ios"]))
/// ```
public struct HeadersPlugin: Plugin {
    /// The fields to add.
    public var fields: HTTPFields
    /// Whether a field the request already has is replaced (`true`) or kept (`false`).
    public var replacesExisting: Bool
    public var scope: PluginScope

    /// A plugin that adds `fields` to requests in `scope`, keeping a field a request already has
    /// unless `replacesExisting` is `true`.
    public init(_ fields: HTTPFields, replacesExisting: Bool = false, scope: PluginScope = .universal) {
        self.fields = fields
        self.replacesExisting = replacesExisting
        self.scope = scope
    }

    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        for field in fields where replacesExisting || request.headers[field.name] == nil {
            request.headers[field.name] = field.value
        }
        return request
    }
}

/// Sets `User-Agent` unless the request has one.
public struct UserAgentPlugin: Plugin {
    /// The user agent sent.
    public var value: String
    public var scope: PluginScope

    /// A plugin that sets `User-Agent` to `value` (`defaultValue` unless given) on requests in
    /// `scope` that have none.
    public init(_ value: String = UserAgentPlugin.defaultValue, scope: PluginScope = .universal) {
        self.value = value
        self.scope = scope
    }

    /// `Courier/1 (<os>; Swift)`.
    public static var defaultValue: String {
        #if os(Linux)
        "Courier/1 (Linux; Swift)"
        #else
        "Courier/1 (Darwin; Swift)"
        #endif
    }

    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        if request.headers[.userAgent] == nil { request.headers[.userAgent] = value }
        return request
    }
}

/// Gives every request a unique id header (`X-Request-ID` by default) unless it has one, so a
/// call can be found in the server's logs.
public struct RequestIDPlugin: Plugin {
    /// The header carrying the id.
    public var headerName: HTTPField.Name
    /// Makes a new id.
    public var makeID: @Sendable () -> String
    public var scope: PluginScope

    /// A plugin that sets `headerName` (`X-Request-ID` unless given) to an id from `makeID` (a
    /// random UUID unless given) on requests in `scope` that have none.
    public init(
        headerName: HTTPField.Name = HTTPField.Name("X-Request-ID")!,
        scope: PluginScope = .universal,
        makeID: @escaping @Sendable () -> String = RequestIDPlugin.randomID
    ) {
        self.headerName = headerName
        self.makeID = makeID
        self.scope = scope
    }

    /// The default id: a random (version 4) UUID in lowercase, made without Foundation's
    /// `UUID()`, which on Linux opens `/dev/urandom` for every id.
    public static func randomID() -> String { RandomUUID.lowercased() }

    public func prepare(_ request: PreparedRequest, context: CallContext) async throws -> PreparedRequest {
        var request = request
        if request.headers[headerName] == nil { request.headers[headerName] = makeID() }
        return request
    }
}
