import Foundation
import HTTPCore
import HTTPTypes
import Logging
import Tracing

/// The trace context an entry keeps from its enqueue to its delivery (``QueueTracing``): taken
/// at the enqueue, continued by each attempt's span, and sent on the request.
extension OfflineQueue {
    /// The tracer of ``QueueTracing/tracer``, or the bootstrapped one; `nil` when there is none.
    /// Checking the bootstrapped instrument's concrete type costs far less than asking
    /// `InstrumentationSystem.tracer`, and with no tracer nothing else is done.
    var activeTracer: (any Tracer)? {
        if let own = configuration.tracing.tracer { return own }
        if InstrumentationSystem.instrument is NoOpInstrument { return nil }
        return InstrumentationSystem.tracer
    }

    /// The trace context of the enqueuing task, as the tracer injects it; `nil` outside any trace
    /// or with no tracer, and for a malformed one (reported, never thrown).
    func currentTraceContext() -> TraceContext? {
        guard let tracer = activeTracer, let context = ServiceContext.current else { return nil }
        var carrier = TraceCarrier()
        tracer.inject(context, into: &carrier, using: TraceCarrier.Access())
        return checkedTraceContext(traceparent: carrier.traceparent, tracestate: carrier.tracestate, from: "the enqueuing task")
    }

    /// The context the values give, or as much of it as is valid; what was left out is reported
    /// as a warning naming where it came from.
    func checkedTraceContext(traceparent: String?, tracestate: String?, from source: String) -> TraceContext? {
        let (context, problem) = TraceContext.lenient(traceparent: traceparent, tracestate: tracestate)
        if let problem {
            configuration.tracing.logger.warning("a malformed trace context is not kept as the entry's", metadata: [
                "from": "\(source)", "problem": "\(problem)",
            ])
        }
        return context
    }

    /// Runs a drain inside a span of its own when there is a tracer: each attempt's span links it.
    func traced(_ drain: () async -> Result<DrainSummary, QueueError>) async -> Result<DrainSummary, QueueError> {
        guard let tracer = activeTracer else { return await drain() }
        let span = tracer.startAnySpan("queue drain", context: ServiceContext.current ?? .topLevel, ofKind: .internal)
        defer { span.end() }
        let result = await ServiceContext.$current.withValue(span.context) { await drain() }
        switch result {
        case .success(let summary):
            if span.isRecording {
                span.attributes["courier.queue.delivered"] = summary.delivered
                span.attributes["courier.queue.failed"] = summary.failed
                span.attributes["courier.queue.dead"] = summary.dead
            }
        case .failure(let error):
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
        }
        return result
    }

    /// Sends an entry's request in a client span that continues the entry's trace (or starts one
    /// linked to it). With no tracer the attempt sends the stored context itself
    /// (``ReplayRequest``), in no frame of this function's.
    ///
    /// `sentTrace`: the attempt span's trace and span ids, as the request carries them, when the
    /// attempt's log line is logged.
    func send(
        _ request: PreparedRequest, for entry: QueueEntry, scopes: Set<PluginScope>, tracer: any Tracer, sentTrace: inout SentTrace?
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
    func logAttempt(of entry: QueueEntry, transition: Transition, trace: SentTrace?) {
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

/// The trace an attempt's request went out in, for the attempt's log line.
struct SentTrace: Sendable {
    var traceID: String
    /// The attempt's own span; `nil` when no tracer made one.
    var spanID: String?
}

/// A stored context as the two fields a tracer injects and extracts.
struct TraceCarrier: Sendable {
    var traceparent: String?
    var tracestate: String?

    init() {}

    init(_ context: TraceContext) {
        traceparent = context.traceparent
        tracestate = context.tracestate
    }

    static let traceparentField = HTTPField.Name("traceparent")!
    static let tracestateField = HTTPField.Name("tracestate")!

    /// Reads and writes the two W3C fields, by name in any case; others are ignored.
    struct Access: Injector, Extractor {
        func inject(_ value: String, forKey key: String, into carrier: inout TraceCarrier) {
            if key.lowercased() == "traceparent" { carrier.traceparent = value }
            if key.lowercased() == "tracestate" { carrier.tracestate = value }
        }

        func extract(key: String, from carrier: TraceCarrier) -> String? {
            switch key.lowercased() {
            case "traceparent": carrier.traceparent
            case "tracestate": carrier.tracestate
            default: nil
            }
        }
    }
}

/// Writes a tracer's fields into a request's header fields.
struct HTTPFieldsTraceInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}
