public import Foundation
public import HTTPTypes

/// A request ready to go on the wire, as plugins and interceptors see it.
public struct PreparedRequest: Sendable {
    /// Method, scheme, authority, path with query, and header fields.
    public var head: HTTPRequest
    /// The body, replayable for retries and redirects.
    public var body: RequestBody?
    /// The limit for one exchange.
    public var timeout: Duration
    /// Header fields of this request that carry credentials besides the client's
    /// ``ClientConfiguration/credentialFields``: a plugin that adds a key under a name of its
    /// own marks it here, so a redirect to another origin drops it too.
    public var credentialFields: Set<HTTPField.Name>

    /// A request with `head`, an optional `body` and the `timeout` of one exchange;
    /// `credentialFields` names its own header fields that carry credentials.
    public init(head: HTTPRequest, body: RequestBody? = nil, timeout: Duration, credentialFields: Set<HTTPField.Name> = []) {
        self.head = head
        self.body = body
        self.timeout = timeout
        self.credentialFields = credentialFields
    }

    /// The request's URL.
    public var url: URL? { head.url }

    /// Header fields, as a shortcut to `head.headerFields`.
    public var headers: HTTPFields {
        get { head.headerFields }
        set { head.headerFields = newValue }
        // In place: with only `get`/`set`, every change through `headers` copied the field
        // storage (the getter's copy shares it with the head), even a second change by the
        // same plugin.
        _modify { yield &head.headerFields }
    }
}

/// What plugins and interceptors know about the call they are part of.
public struct CallContext: Sendable {
    /// The endpoint's name (``Endpoint/name``).
    public var endpointName: String
    /// The endpoint's plugin scopes.
    public var scopes: Set<PluginScope>
    /// Which attempt this is, from 1; retries by the client's ``RetryPolicy`` count up.
    public var attempt: Int
    /// When the call started, for durations measured by plugins.
    public var startedAt: ContinuousClock.Instant
    /// The in-memory limit when the call reads the whole body into memory (data and model
    /// calls), passed to the transport as a hint; `nil` when the call streams the body.
    var collectingUpTo: Int?

    /// The context of a call to the endpoint named `endpointName` in `scopes`: its first attempt
    /// and started now, unless `attempt` and `startedAt` say otherwise.
    public init(endpointName: String, scopes: Set<PluginScope>, attempt: Int = 1, startedAt: ContinuousClock.Instant = .now) {
        self.endpointName = endpointName
        self.scopes = scopes
        self.attempt = attempt
        self.startedAt = startedAt
    }
}
