import InMemoryTracing
import OfflineQueue
import TestSupport
import Tracing

extension W3CTestTracer {
    /// The client spans of attempts, finished.
    var attempts: [FinishedInMemorySpan] { base.finishedSpans.filter { $0.kind == .client } }
}

/// The trace id in a `traceparent` value.
func traceID(ofTraceparent value: String?) -> String? {
    value.flatMap { try? TraceContext(traceparent: $0) }?.traceID
}

extension FinishedInMemorySpan {
    /// The attribute `key` as recorded.
    func attribute(_ key: String) -> SpanAttribute? { attributes[key]?.toSpanAttribute() }
}
