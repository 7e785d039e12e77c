import Foundation
import HTTPCore
import HTTPTypes

/// A stored entry rebuilt as the request the client sends, at each attempt: the row's typed
/// parts (method, URL, headers, body, timeout) with the client's default headers for names the
/// row does not set, the idempotency key, and the templates resolved for the entry's origin.
/// No endpoint and no second trip through the client's request building: the client's
/// replay entry point runs the plugins of the entry's scopes, its interceptors, redirects and
/// validation on this request.
struct ReplayRequest {
    let request: PreparedRequest
    /// The values of resolved templates and credential fields, kept out of stored excerpts.
    let secrets: SecretScrubber

    /// `trace`: the stored context to send as it is (no tracer makes a span of its own), in
    /// place of any `traceparent` and `tracestate` the row holds.
    ///
    /// - Throws: ``QueueError/invalidRequest(_:)`` for a row that is not a request, or a
    ///   ``TemplateError`` for a template not allowed for the entry's origin.
    init(entry: QueueEntry, body: RequestBody?, drain: QueueDrainer, trace: TraceContext? = nil) throws {
        guard let method = HTTPRequest.Method(entry.method) else { throw QueueError.invalidRequest("stored method \(entry.method) is invalid") }
        let target = try drain.replayTargets(entry.url)
        let origin = target.origin
        var headers = HTTPFields()
        headers.reserveCapacity(entry.headers.count + (trace == nil ? 1 : 3))
        var credentials: Set<HTTPField.Name> = []
        var secrets = SecretScrubber()
        let idempotencyHeader = drain.configuration.idempotencyHeader
        // Enqueues never store the idempotency header (the key has its own column), but a row
        // of an older Courier may hold one, which the key then replaces.
        var storedKeyHeader = false
        for header in entry.headers {
            guard let name = HTTPField.Name(header.name) else { throw QueueError.invalidRequest("stored header \(header.name) is invalid") }
            // The stored context replaces the row's own fields (a malformed one kept as a header).
            if trace != nil && (name == TraceCarrier.traceparentField || name == TraceCarrier.tracestateField) { continue }
            if name == idempotencyHeader { storedKeyHeader = true }
            let value = try drain.configuration.templates.resolve(header.value, for: origin)
            if value != header.value || drain.configuration.secretHeaders.contains(name) {
                // A resolved template is a credential wherever it sits: dropped when a redirect
                // leaves the origin, and never stored in an excerpt.
                credentials.insert(name)
                secrets.add(value)
            }
            headers.append(HTTPField(name: name, value: value))
        }
        if storedKeyHeader {
            headers[idempotencyHeader] = entry.idempotencyKey
        } else {
            headers.append(HTTPField(name: idempotencyHeader, value: entry.idempotencyKey))
        }
        if let trace {
            headers.append(HTTPField(name: TraceCarrier.traceparentField, value: trace.traceparent))
            if let state = trace.tracestate { headers.append(HTTPField(name: TraceCarrier.tracestateField, value: state)) }
        }
        self.secrets = secrets
        request = PreparedRequest(
            method: method, scheme: target.scheme, authority: target.authority, path: target.path,
            headers: drain.client.withDefaults(headers), body: body,
            timeout: entry.timeout ?? drain.client.configuration.timeout, credentialFields: credentials
        )
    }
}

/// A stored URL as a request head holds it (scheme, authority, path with query) and its origin.
struct ReplayTarget: Sendable {
    let scheme: String
    let authority: String
    let path: String
    let origin: Origin?

    /// - Throws: ``QueueError/invalidRequest(_:)`` for text that is not an absolute URL.
    init(_ text: String) throws(QueueError) {
        guard let url = URL(string: text), url.host != nil else { throw .invalidRequest("stored URL \(text) is invalid") }
        // The parts `HTTPRequest(url:)` takes, so the head is the one a URL would give.
        let head = HTTPRequest(method: .get, url: url)
        guard let scheme = head.scheme, let authority = head.authority, let path = head.path else {
            throw .invalidRequest("stored URL \(text) is invalid")
        }
        self.scheme = scheme
        self.authority = authority
        self.path = path
        origin = Origin(url)
    }
}

/// URL strings parsed once per queue rather than at every use: a queue's entries mostly share
/// a few URLs, and parsing one (`URL`, then its parts) costs more than the rest of storing or
/// rebuilding the request. Replays keep each stored URL's ``ReplayTarget``; enqueues each
/// given URL's checked form. Holds at most `limit` URLs, each of at most `longest` bytes (a
/// longer one is parsed every time), so what it keeps stays small; when full it starts over.
final class ParsedURLs<Parsed: Sendable>: Sendable {
    private let parsed = LockedBox<[String: Parsed]>([:])
    private let limit: Int
    private let longest: Int
    private let parse: @Sendable (String) throws(QueueError) -> Parsed

    init(limit: Int = 256, longest: Int = 2048, parse: @escaping @Sendable (String) throws(QueueError) -> Parsed) {
        self.limit = limit
        self.longest = longest
        self.parse = parse
    }

    func callAsFunction(_ text: String) throws(QueueError) -> Parsed {
        if text.utf8.count > longest { return try parse(text) }
        if let known = parsed.withLock({ $0[text] }) { return known }
        let value = try parse(text)
        parsed.withLock { cache in
            if cache.count >= limit { cache.removeAll(keepingCapacity: true) }
            cache[text] = value
        }
        return value
    }
}
