import Tracing

/// The tracer a queue uses and the drain's span.
extension QueueTracing {
    /// The tracer of ``QueueTracing/tracer``, or the bootstrapped one; `nil` when there is none.
    /// Checking the bootstrapped instrument's concrete type costs far less than asking
    /// `InstrumentationSystem.tracer`, and with no tracer nothing else is done.
    var activeTracer: (any Tracer)? {
        if let own = tracer { return own }
        if InstrumentationSystem.instrument is NoOpInstrument { return nil }
        return InstrumentationSystem.tracer
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
}
