import InMemoryTracing
import OfflineQueue
import Tracing

/// swift-distributed-tracing's in-memory tracer, propagated as W3C `traceparent` (as an
/// OpenTelemetry tracer propagates): its ids are 32 and 16 lowercase hex digits, its spans
/// recorded for the test to read. Given to a queue through `QueueTracing.tracer`, so no test
/// bootstraps the process-wide instrument that its neighbours run beside.
struct W3CTracer: Tracer {
    let memory = InMemoryTracer(idGenerator: .init(nextTraceID: { randomHex(bytes: 16) }, nextSpanID: { randomHex(bytes: 8) }))

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        memory.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() { memory.forceFlush() }

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject) where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract) where Extract.Carrier == Carrier {
        guard let value = extractor.extract(key: "traceparent", from: carrier), let parsed = try? TraceContext(traceparent: value) else { return }
        context.inMemorySpanContext = InMemorySpanContext(traceID: parsed.traceID, spanID: parsed.parentID, parentSpanID: nil)
    }

    /// The client spans of attempts, finished.
    var attempts: [FinishedInMemorySpan] { memory.finishedSpans.filter { $0.kind == .client } }
}

/// A tracer whose injected context is not of the W3C format: what an enqueue must survive.
struct GarbledTracer: Tracer {
    let memory = InMemoryTracer()

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        memory.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject) where Inject.Carrier == Carrier {
        injector.inject("00-not-a-trace-01", forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract) where Extract.Carrier == Carrier {}
}

func randomHex(bytes: Int) -> String {
    (0..<bytes).map { _ in
        let byte = UInt8.random(in: 0...255)
        return String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
    }.joined()
}

/// The trace id in a `traceparent` value.
func traceID(ofTraceparent value: String?) -> String? {
    value.flatMap { try? TraceContext(traceparent: $0) }?.traceID
}

extension FinishedInMemorySpan {
    /// The attribute `key` as recorded.
    func attribute(_ key: String) -> SpanAttribute? { attributes[key]?.toSpanAttribute() }
}
