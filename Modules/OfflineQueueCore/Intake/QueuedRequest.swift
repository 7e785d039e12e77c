import Foundation
import HTTPTypes
public import HTTPCore

/// One request for ``OfflineQueue/enqueue(_:)``, in stored form.
public struct QueuedRequest: Sendable {
    // Changing the method, the URL or the headers makes the request text again, validated as
    // text; a prepared request is stored as it is.
    /// The HTTP method, such as `POST`.
    public var method: String { didSet { prepared = nil } }
    /// The absolute URL, query included; it may take values from a parent's kept response
    /// (`ResponseReference`).
    public var url: String { didSet { prepared = nil } }
    /// Header fields in order. One named by the queue's idempotency header gives the key when the
    /// options give none; secret ones are stored as `QueueConfiguration.secrets` says.
    public var headers: [(name: String, value: String)] { didSet { prepared = nil } }
    /// The body, if any: stored in the row up to `QueueConfiguration.inlineBodyLimit` bytes,
    /// apart from it when larger.
    public var body: RequestBody?
    /// The plugin scopes, by name, whose plugins run when the request is sent.
    public var scopes: [String]
    /// The entry's name, for logs and the `endpoint` label of the queue's metrics; `nil` names
    /// it by its method and origin (`POST https://api.example.com`). Give a name of few values,
    /// such as a route (`POST /orders/{id}/items`), never one per entry: past
    /// ``QueueMetricsOptions/endpointLimit`` names, metrics count the rest as `other`.
    public var name: String?
    /// The limit for one exchange; `nil` uses the client's.
    public var timeout: Duration?
    /// How the request is placed in the queue: its group, priority, key, dependencies and the rest.
    public var options: EnqueueOptions
    /// The trace the request continues when it is delivered. `nil` (the default) takes the
    /// request's own `traceparent` header when it has a valid one, or else the context of the
    /// enqueuing task (`ServiceContext.current`, as the tracer injects it). Set it for a context
    /// that comes from elsewhere, such as `sync enqueue`'s `TRACEPARENT`.
    public var traceContext: TraceContext?
    /// The typed request this was made from, stored as it is without parsing its text forms.
    private(set) var prepared: PreparedRequest?

    /// A request given as text, as a shell tool receives it; an enqueue checks the method, the URL
    /// and the headers.
    public init(
        method: String, url: String, headers: [(name: String, value: String)] = [], body: RequestBody? = nil,
        scopes: [String] = [], name: String? = nil, timeout: Duration? = nil, options: EnqueueOptions = EnqueueOptions()
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.scopes = scopes
        self.name = name
        self.timeout = timeout
        self.options = options
        self.prepared = nil
    }

    /// A prepared request (from `HTTPCore.APIClient.request(for:)`) in stored form.
    public init(_ request: PreparedRequest, scopes: [String] = [], name: String? = nil, options: EnqueueOptions = EnqueueOptions()) {
        method = request.head.method.rawValue
        url = request.url?.absoluteString ?? ""
        headers = request.head.headerFields.map { ($0.name.rawName, $0.value) }
        body = request.body
        self.scopes = scopes
        self.name = name
        timeout = request.timeout
        self.options = options
        prepared = request
    }
}
