public import InMemoryTracing
public import Tracing

/// swift-distributed-tracing's in-memory tracer, propagated as W3C `traceparent`, as an
/// OpenTelemetry tracer propagates: its ids are 32 and 16 lowercase hex digits, its spans
/// recorded in ``base`` for the test to read. Given to the code under test directly (a
/// `tracer:` parameter), so no test bootstraps the process-wide instrument its neighbours share.
public struct W3CTestTracer: Tracer {
    public let base = InMemoryTracer(idGenerator: .init(nextTraceID: { randomHex(digits: 32) }, nextSpanID: { randomHex(digits: 16) }))

    /// A `traceparent` injected in place of the span's, such as a malformed one for code that
    /// must survive it; `nil` injects the span's.
    public let injected: String?

    public init(injecting injected: String? = nil) {
        self.injected = injected
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        base.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    public func forceFlush() { base.forceFlush() }

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject) where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject(injected ?? "00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    /// Reads a `traceparent` of version 00 as the remote parent; anything else is ignored.
    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract) where Extract.Carrier == Carrier {
        guard let value = extractor.extract(key: "traceparent", from: carrier) else { return }
        let parts = value.split(separator: "-")
        guard parts.count == 4, parts[0] == "00", parts[1].count == 32, parts[2].count == 16 else { return }
        context.inMemorySpanContext = InMemorySpanContext(traceID: String(parts[1]), spanID: String(parts[2]), parentSpanID: nil)
    }
}

private func randomHex(digits: Int) -> String {
    String((0..<digits).map { _ in "0123456789abcdef".randomElement()! })
}
