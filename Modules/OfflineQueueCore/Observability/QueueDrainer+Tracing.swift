import Foundation
import HTTPCore
import HTTPTypes
import Logging
import Tracing

/// An attempt's span and its log line (``QueueTracing``): the request continues the trace its
/// entry was enqueued in.
extension QueueDrainer {
    /// Sends an entry's request in a client span that continues the entry's trace (or starts one
    /// linked to it). With no tracer the attempt sends the stored context itself
    /// (``ReplayRequest``), in no frame of this function's.
    ///
    /// `sentTrace`: the attempt span's trace and span ids, as the request carries them, when the
    /// attempt's log line is logged.
    func send(
        _ request: PreparedRequest, for entry: QueueEntry, scopes: Set<PluginScope>, tracer: any Tracer, sentTrace: inout SentTrace?,
        keeping: KeptResponseBox? = nil
    ) async throws(NetworkError) -> Response<Void> {
        let drain = ServiceContext.current ?? .topLevel
        var enqueuer: ServiceContext?
        if let stored = entry.traceContext {
            var extracted = ServiceContext.topLevel
            tracer.extract(TraceCarrier(stored), into: &extracted, using: TraceCarrier.Access())
            enqueuer = extracted
        }
        let parent = configuration.tracing.delivery == .continued ? enqueuer ?? drain : enqueuer == nil ? drain : .topLevel
        let span = tracer.startAnySpan(request.head.method.rawValue, context: parent, ofKind: .client)
        defer { span.end() }
        if let enqueuer {
            if configuration.tracing.delivery == .linked { span.addLink(SpanLink(context: enqueuer, attributes: [:])) }
            span.addLink(SpanLink(context: drain, attributes: [:]))
        }
        if span.isRecording { describe(span, request: request, entry: entry) }
        var traced = request
        // The attempt's own context replaces any the row's headers hold.
        tracer.inject(span.context, into: &traced.headers, using: HTTPFieldsTraceInjector())
        if logsAttempts, let sent = TraceContext(stored: traced.headers[TraceCarrier.traceparentField], tracestate: nil) {
            sentTrace = SentTrace(traceID: sent.traceID, spanID: sent.parentID)
        }
        let result = await ServiceContext.$current.withValue(span.context) { () async -> Result<Response<Void>, NetworkError> in
            do throws(NetworkError) {
                if let keeping { return .success(try await send(traced, for: entry, scopes: scopes, keepingInto: keeping)) }
                return .success(try await client.send(traced, name: entry.name, scopes: scopes))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let response):
            if span.isRecording { span.attributes["http.response.status_code"] = response.status.code }
        case .failure(let error):
            if let status = error.response?.status.code, span.isRecording { span.attributes["http.response.status_code"] = status }
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
        }
        return try result.get()
    }

    /// Whether each attempt's line is logged: ``QueueTracing/logger`` at debug level or below.
    var logsAttempts: Bool { configuration.tracing.logger.logLevel <= .debug }

    /// An attempt's line, at debug level on ``QueueTracing/logger``: the entry, what became of it
    /// and the trace it went out in. `trace_id` and `span_id` are those of the attempt's own span
    /// when a W3C tracer sent it, so the line can be found from the span and the span from the
    /// line; with no tracer, `trace_id` is the stored trace's and there is no `span_id`.
    func logAttempt(of entry: QueueEntry, transition: EntryLifecycle.Transition, trace: SentTrace?) {
        let logger = configuration.tracing.logger
        guard logger.logLevel <= .debug else { return }
        var metadata: Logger.Metadata = [
            "entry": "\(entry.id)", "name": "\(entry.name)", "attempt": "\(entry.attempts + 1)",
        ]
        if let trace {
            metadata["trace_id"] = "\(trace.traceID)"
            if let spanID = trace.spanID { metadata["span_id"] = "\(spanID)" }
        }
        let message: Logger.Message
        switch transition {
        case .deliver(let status):
            message = "delivered"
            metadata["status"] = "\(status)"
        case .retry(let retry):
            message = retry.waitingForNetwork ? "attempt failed, waiting for the network" : "attempt failed, will retry"
            if let status = retry.status { metadata["status"] = "\(status)" }
            metadata["error"] = "\(retry.error)"
            if !retry.waitingForNetwork { metadata["retry_in"] = "\(retry.after)" }
        case .deadLetter(let dead):
            message = "dead-lettered"
            metadata["reason"] = "\(dead.reason.rawValue)"
            if let status = dead.status { metadata["status"] = "\(status)" }
            metadata["error"] = "\(dead.error)"
        case .release:
            message = "attempt interrupted, given back"
        case .conflict(let conflict):
            message = "conflict, left for an operator"
            metadata["status"] = "\(conflict.status)"
            metadata["error"] = "\(conflict.error)"
        case .drop(let conflict):
            message = "conflict, dropped by the resolver"
            metadata["status"] = "\(conflict.status)"
        }
        logger.debug(message, metadata: metadata)
    }

    /// OpenTelemetry's HTTP client attributes (the query's values left out of `url.full`), and
    /// the entry's: its id, its attempt number and how long it waited since its enqueue.
    private func describe(_ span: any Span, request: PreparedRequest, entry: QueueEntry) {
        let head = request.head
        span.attributes["http.request.method"] = head.method.rawValue
        let path = head.path.map { $0.split(separator: "?", maxSplits: 1).first.map(String.init) ?? $0 } ?? ""
        span.attributes["url.full"] = "\(head.scheme ?? "http")://\(head.authority ?? "")\(path)"
        if let authority = head.authority { span.attributes["server.address"] = authority }
        span.attributes["courier.endpoint"] = entry.name
        if entry.attempts > 0 { span.attributes["http.request.resend_count"] = entry.attempts }
        span.attributes["messaging.message.id"] = String(entry.id)
        span.attributes["courier.queue.entry.id"] = Int(entry.id)
        span.attributes["courier.queue.attempt"] = entry.attempts + 1
        span.attributes["courier.queue.wait.duration"] = max(0, configuration.clock.now().wall.timeIntervalSince(entry.createdAt))
        if let stored = entry.traceContext { span.attributes["courier.queue.enqueue.trace_id"] = stored.traceID }
    }
}
