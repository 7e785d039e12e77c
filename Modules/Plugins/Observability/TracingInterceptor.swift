public import HTTPCore
public import Tracing
public import HTTPTypes

/// Wraps each attempt of a call in a client span and injects the trace context into the
/// request's header fields, through swift-distributed-tracing.
///
/// The tracer decides the propagation format; an OpenTelemetry tracer (swift-otel) writes the
/// W3C `traceparent` and `tracestate` fields. Spans follow OpenTelemetry's HTTP client
/// conventions: one span per attempt, named after the method, with `http.request.method`,
/// `url.full` (secret query values redacted), `server.address`, `http.response.status_code`
/// and `http.request.resend_count`; 5xx and transport failures mark the span as an error.
///
/// ```swift
/// configuration.interceptors.append(TracingInterceptor())            // the bootstrapped tracer
/// ```
public struct TracingInterceptor: Interceptor {
    /// The tracer spans are started on; `InstrumentationSystem.tracer` when `nil`.
    public var tracer: (any Tracer)?
    /// What is hidden in `url.full`.
    public var redaction: Redaction
    public var scope: PluginScope

    /// An interceptor that starts spans on `tracer` (the bootstrapped one when `nil`) and hides
    /// secrets in `url.full` with `redaction`, for endpoints in `scope`.
    public init(tracer: (any Tracer)? = nil, redaction: Redaction = .standard, scope: PluginScope = .universal) {
        self.tracer = tracer
        self.redaction = redaction
        self.scope = scope
    }

    public func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        let tracer: any Tracer
        if let own = self.tracer {
            tracer = own
        } else if InstrumentationSystem.instrument is NoOpInstrument {
            // No tracer bootstrapped (nor bound to this task): `InstrumentationSystem.tracer`
            // would be a `NoOpTracer`, whose spans record nothing and whose `inject` writes
            // nothing, so the request goes on as it is. Checking the concrete type costs far
            // less than that lookup's two casts to `any Tracer`, and no span is made.
            return try await next(request)
        } else {
            tracer = InstrumentationSystem.tracer
        }
        let span = tracer.startAnySpan(request.head.method.rawValue, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        defer { span.end() }
        let head = request.head
        let recording = span.isRecording
        if recording {
            span.attributes["http.request.method"] = head.method.rawValue
            span.attributes["url.full"] = redaction.redactQuery(of: "\(head.scheme ?? "http")://\(head.authority ?? "")\(head.path ?? "")")
            if let authority = head.authority { span.attributes["server.address"] = authority }
            span.attributes["courier.endpoint"] = context.endpointName
            if context.attempt > 1 { span.attributes["http.request.resend_count"] = context.attempt - 1 }
        }

        var traced = request
        tracer.inject(span.context, into: &traced.headers, using: HTTPFieldsInjector())
        do {
            let response = try await next(traced)
            let code = response.head.status.code
            if recording { span.attributes["http.response.status_code"] = code }
            if code >= 500 { span.setStatus(SpanStatus(code: .error)) }
            return response
        } catch {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
            throw error
        }
    }
}

/// Writes trace context values into HTTP header fields.
public struct HTTPFieldsInjector: Injector {
    /// An injector; it has no settings.
    public init() {}

    public func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}
