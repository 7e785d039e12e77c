import Foundation
import HTTPCore
import HTTPTypes

/// What an enqueue checks before anything is stored: a request given as text or prepared,
/// turned into the entry the store inserts.
extension OfflineQueue {
    /// A request given as text (`sync enqueue`, ``enqueue(method:url:headers:body:name:options:)``)
    /// parsed and validated, once.
    private func parse(_ request: QueuedRequest) throws(QueueError) -> (method: String, target: EnqueueTarget, fields: [HTTPField]) {
        guard HTTPRequest.Method(request.method) != nil else {
            throw .invalidRequest("\(request.method.debugDescription) is not an HTTP method")
        }
        // A URL that takes values from a parent's response is checked with each placeholder
        // standing for a segment, and stored as written.
        let target = ResponseReference.mayContain(request.url)
            ? try EnqueueTarget(referencing: request.url) : try enqueueTargets(request.url)
        var fields: [HTTPField] = []
        fields.reserveCapacity(request.headers.count)
        for (name, value) in request.headers {
            guard let fieldName = HTTPField.Name(name) else { throw .invalidRequest("\(name.debugDescription) is not a header name") }
            guard HTTPField.isValidValue(value) else { throw .invalidRequest("the value of header \(name) is not valid") }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return (request.method, target, fields)
    }

    /// `request` checked and turned into what the store inserts (its body not yet stored).
    func validate(_ request: QueuedRequest) throws(QueueError) -> NewEntry {
        // A prepared request is typed already: it is stored as it is, not parsed again.
        let (method, target, fields): (String, EnqueueTarget, [HTTPField])
        if let prepared = request.prepared {
            guard let preparedURL = prepared.url else { throw .invalidRequest("the prepared request has no URL") }
            (method, target, fields) = (prepared.head.method.rawValue, EnqueueTarget(preparedURL), Array(prepared.head.headerFields))
        } else {
            (method, target, fields) = try parse(request)
        }
        var headers: [StoredHeader] = []
        var key = request.options.idempotencyKey
        let (traceContext, ownTrace) = traceContext(of: request, fields: fields)
        for field in fields {
            let (fieldName, name, value) = (field.name, field.name.rawName, field.value)
            if fieldName == configuration.idempotencyHeader {
                key = key ?? value
                continue
            }
            // The request's own valid context is stored as the entry's, not as header fields.
            if ownTrace && (fieldName == TraceCarrier.traceparentField || fieldName == TraceCarrier.tracestateField) { continue }
            // A secret field is stored only as a template (`Bearer ${credential:x}`); a value that
            // mixes a template with literal text may carry a secret in that text, in any field.
            let literalSecret = HeaderTemplates.containsPlaceholder(value)
                ? HeaderTemplates.mixesLiteralSecret(value)
                : configuration.secretHeaders.contains(fieldName)
            if literalSecret {
                switch configuration.secrets {
                case .drop: continue
                case .store: break
                case .reject: throw .secretHeader(name: name)
                }
            }
            headers.append(StoredHeader(name: name, value: value))
        }
        try checkTimes(request)
        var entry = NewEntry(
            idempotencyKey: key ?? RandomUUID.lowercased(),
            method: method,
            url: target.url,
            headers: headers,
            body: nil,
            scopes: request.scopes,
            name: request.name ?? target.defaultName(method: method),
            group: request.options.group,
            priority: request.options.priority,
            timeout: request.timeout,
            notBefore: request.options.notBefore,
            traceContext: traceContext
        )
        if !request.options.after.isEmpty {
            entry.after = try Self.checkedParents(request.options.after)
            entry.whenParentDies = request.options.whenParentDies
        }
        entry.keepResponse = try request.options.keepResponse?.checked()
        entry.coalescingKey = try request.options.coalescingKey.map { key throws(QueueError) in try CoalescingRule.checked(key) }
        if let delivery = request.options.delivery, !delivery.isEmpty { entry.delivery = try delivery.checked() }
        (entry.references, entry.bodyTakesValues) = try Self.responseReferences(
            url: entry.url, headers: headers, body: request.body, after: entry.after
        )
        return entry
    }

    /// The values the request takes from its parents' kept responses (``ResponseReference``):
    /// in its URL and header values always (a placeholder there is never sent), and in a body
    /// held in memory when the entry waits for others. Each must read a parent.
    private static func responseReferences(
        url: String, headers: [StoredHeader], body: RequestBody?, after: [EntryID]
    ) throws(QueueError) -> (references: [ResponseReference], inBody: Bool) {
        var found = try ResponseReference.references(in: url)
        for header in headers { found += try ResponseReference.references(in: header.value) }
        // A file or a stream is not read at enqueue: it takes no values (its URL and headers
        // still may).
        if !after.isEmpty, case .data(let data)? = body?.source, ResponseReference.mayContain(data) {
            guard data.count <= ResponseReference.maxBodyLength else {
                throw .invalidRequest("a body that takes values from a response is at most \(ResponseReference.maxBodyLength) bytes, not \(data.count)")
            }
            guard let text = String(validating: data, as: UTF8.self) else {
                throw .invalidRequest("a body that takes values from a response must be UTF-8 text")
            }
            let inBody = try ResponseReference.references(in: text)
            return (try checked(found + inBody, after: after), !inBody.isEmpty)
        }
        return (try checked(found, after: after), false)
    }

    private static func checked(_ references: [ResponseReference], after: [EntryID]) throws(QueueError) -> [ResponseReference] {
        if let stray = references.first(where: { !after.contains($0.entry) }) {
            throw .invalidRequest(
                "\(stray) reads entry \(stray.entry), which this entry does not wait for: add it to EnqueueOptions.after (sync enqueue --after \(stray.entry))"
            )
        }
        return references
    }

    /// The entries to wait for, each once, in id order: ids are positive, and at most
    /// ``DependencyRule/maxParents``. Whether the queue holds them is the store's check, in the
    /// insert's transaction.
    private static func checkedParents(_ ids: [EntryID]) throws(QueueError) -> [EntryID] {
        let parents = Array(Set(ids)).sorted()
        if let bad = parents.first(where: { $0 <= 0 }) { throw .invalidRequest("entry id \(bad) to wait for is not an entry id") }
        guard parents.count <= DependencyRule.maxParents else {
            throw .invalidRequest("an entry may wait for at most \(DependencyRule.maxParents) others, not \(parents.count)")
        }
        return parents
    }

    /// The trace context an entry keeps: the one given with the request, else the request's own
    /// valid `traceparent` (and `tracestate`) header fields, else the enqueuing task's. `own`
    /// says the fields gave it, so they are not stored again as headers. A malformed field is
    /// left among the headers, as any other, with a warning.
    private func traceContext(of request: QueuedRequest, fields: [HTTPField]) -> (context: TraceContext?, own: Bool) {
        if let given = request.traceContext { return (given, false) }
        var traceparent: String?, tracestate: String?
        for field in fields {
            if field.name == TraceCarrier.traceparentField { traceparent = field.value }
            if field.name == TraceCarrier.tracestateField { tracestate = field.value }
        }
        if traceparent != nil {
            let own = checkedTraceContext(traceparent: traceparent, tracestate: tracestate, from: "the request's traceparent header")
            if own?.tracestate == tracestate, let own { return (own, true) }
            // A field that is not valid stays a header of the request's; nothing replaces it.
            return (nil, false)
        }
        return (currentTraceContext(), false)
    }

    /// Range checks for the request's times, so that a mistaken or hostile value is refused
    /// with a reason instead of trapping later or expiring the entry unseen.
    private func checkTimes(_ request: QueuedRequest) throws(QueueError) {
        if let timeout = request.timeout, timeout <= .zero {
            throw .invalidRequest("the timeout \(timeout) is not positive")
        }
        guard let notBefore = request.options.notBefore else { return }
        let ahead = notBefore.timeIntervalSince(configuration.clock.now().wall)
        guard ahead.isFinite, ahead <= Duration.longestInput.seconds else {
            throw .invalidRequest("notBefore \(notBefore) is more than 100 years away")
        }
        if let maxAge = configuration.policy.maxAge, ahead >= maxAge.seconds {
            throw .invalidRequest(
                "notBefore is \(Int(ahead)) s ahead, beyond the policy's maximum age of \(maxAge.components.seconds) s: the entry would expire before its first attempt"
            )
        }
    }
}

/// An enqueued URL as stored: checked to be an absolute `http` or `https` URL with a host, its
/// text as `URL` gives it back, and its origin for the entry's default name.
struct EnqueueTarget: Sendable {
    let url: String
    /// The URL's origin as text (`https://api.example.com`), made once per parsed URL.
    let origin: String?

    init(_ url: URL) {
        self.url = url.absoluteString
        self.origin = Origin(url)?.description
    }

    /// The name of an entry given none: the method and the origin (`POST https://api.example.com`,
    /// `PUT http://10.0.0.7:8080`). Never the path, whose segments often vary by entry (an id
    /// each) and would make one metric series per entry; an origin's values are few.
    func defaultName(method: String) -> String {
        guard let origin else { return method }
        return method + " " + origin
    }

    /// A URL that takes values from a parent's response (``ResponseReference``): checked with
    /// each placeholder standing for a segment, every placeholder after the origin (which is
    /// fixed at enqueue, so a response cannot send the request elsewhere), and kept as written.
    init(referencing text: String) throws(QueueError) {
        let occurrences = try ResponseReference.occurrences(in: text)
        var standIn = ""
        var position = text.startIndex
        for (_, range) in occurrences {
            standIn += text[position..<range.lowerBound]
            standIn += "0"
            position = range.upperBound
        }
        standIn += text[position...]
        let checked = try EnqueueTarget(standIn)
        let afterScheme = text.range(of: "://")?.upperBound ?? text.startIndex
        let originEnd = text[afterScheme...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" }
        if let first = occurrences.first, originEnd.map({ first.range.lowerBound < $0 }) ?? true {
            throw .invalidRequest("\(first.reference) stands in the URL's origin: a response may give a path segment or a query value, never the host")
        }
        url = text
        origin = checked.origin
    }

    /// - Throws: ``QueueError/invalidRequest(_:)`` for text that is not such a URL.
    init(_ text: String) throws(QueueError) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw .invalidRequest("\(text.debugDescription) is not an absolute http or https URL")
        }
        self.init(url)
    }
}
