public import Logging
public import Tracing

/// How a queue carries traces from the enqueue to the delivery (`Docs/Observability.md`).
///
/// An enqueue keeps the trace context it runs in with the entry (``TraceContext``); each
/// attempt then continues that trace, whatever tracer is bootstrapped, and with none the stored
/// `traceparent` and `tracestate` still go out on the request.
///
/// ```swift
/// configuration.tracing.delivery = .linked      // a trace of its own per delivery
/// ```
public struct QueueTracing: Sendable {
    /// Where a delivery's spans go.
    public enum Delivery: Sendable, Hashable {
        /// Each attempt's span is a child of the span the entry was enqueued in (one trace from
        /// the user's action to the server's answer), linked to the drain's span. The default.
        case continued
        /// Each attempt's span starts a trace of its own, linked to the enqueuer's span and to
        /// the drain's: for traces that must not span the days an entry may wait. With no
        /// tracer, the request then carries no trace context.
        case linked
    }

    /// Where a delivery's spans go; ``Delivery/continued`` unless changed.
    public var delivery: Delivery
    /// The tracer that captures contexts and records spans; `nil` uses the bootstrapped one
    /// (`InstrumentationSystem`).
    public var tracer: (any Tracer)?
    /// Where a malformed trace context is reported (it is dropped; the enqueue goes on), and,
    /// at debug level, each attempt's outcome with the `trace_id` and `span_id` it went out in.
    public var logger: Logger

    /// Tracing as given; by default each delivery continues the enqueuer's trace, with the
    /// bootstrapped tracer, and reports to a logger labelled `courier.queue`.
    public init(delivery: Delivery = .continued, tracer: (any Tracer)? = nil, logger: Logger = Logger(label: "courier.queue")) {
        self.delivery = delivery
        self.tracer = tracer
        self.logger = logger
    }
}
