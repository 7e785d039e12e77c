import Foundation
import HTTPCore
import HTTPTypes
import Logging
import Tracing

/// The trace context an entry keeps from its enqueue to its delivery (``QueueTracing``): taken
/// at the enqueue, continued by each attempt's span, and sent on the request.
extension OfflineQueue {
    /// The trace context of the enqueuing task, as the tracer injects it; `nil` outside any trace
    /// or with no tracer, and for a malformed one (reported, never thrown).
    func currentTraceContext() -> TraceContext? {
        guard let tracer = configuration.tracing.activeTracer, let context = ServiceContext.current else { return nil }
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
