import Foundation
import Logging
#if OTLP
import OTel
#endif
import ServiceLifecycle
import Tracing

/// `sync run` and `sync drain`'s own spans (the drain's, and each attempt's, which continue the
/// trace the entry was enqueued in), exported over OTLP/HTTP with swift-otel when the standard
/// OpenTelemetry variables ask for it: `OTEL_TRACES_EXPORTER=otlp`, with
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`), `OTEL_SERVICE_NAME`,
/// `OTEL_EXPORTER_OTLP_HEADERS` and the rest as swift-otel reads them. Off unless asked for;
/// `OTEL_SDK_DISABLED=true` turns it off whatever else is set.
///
/// The export is built with the package's `OTLP` trait (`swift build --traits OTLP`); a `sync`
/// built without it refuses `OTEL_TRACES_EXPORTER=otlp` with 78 and says how to build it.
enum Telemetry {
    /// The service name when `OTEL_SERVICE_NAME` gives none.
    static let defaultServiceName = "courier-sync"

    /// How long an exit waits for the last spans to go out. The exporter's own timeout
    /// (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default) bounds an export, retries included: a
    /// receiver that is down delays the exit by that much, then swift-otel warns "Failed to
    /// export batch". This bounds the lot.
    static let flushLimit = Duration.seconds(15)

    /// Bootstraps the process's tracer with swift-otel's, when the environment asks for it, and
    /// returns the service that exports its spans (run it; its graceful shutdown flushes them).
    /// `nil` when nothing is asked for.
    ///
    /// Says what is wrong and throws exit 78 (EX_CONFIG, ``SysExit/unsafeConfiguration``) for
    /// an exporter other than `otlp` or `none`, a protocol other than HTTP, settings swift-otel
    /// refuses, or `otlp` in a `sync` built without the `OTLP` trait.
    static func bootstrap(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) throws -> (any Service)? {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
        guard let exporter = environment["OTEL_TRACES_EXPORTER"]?.trimmingCharacters(in: .whitespaces).lowercased(), !exporter.isEmpty, exporter != "none" else {
            return nil
        }
        guard exporter == "otlp" else {
            complain("OTEL_TRACES_EXPORTER=\(exporter): sync exports its spans over OTLP/HTTP (otlp) or not at all (none)")
            throw SysExit.unsafeConfiguration
        }
        if let transport = environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] ?? environment["OTEL_EXPORTER_OTLP_PROTOCOL"],
           !transport.hasPrefix("http/") {
            complain("OTEL_EXPORTER_OTLP_PROTOCOL=\(transport): sync exports over OTLP/HTTP only (http/protobuf or http/json)")
            throw SysExit.unsafeConfiguration
        }
        #if OTLP
        var configuration = OTel.Configuration.default
        configuration.serviceName = defaultServiceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        // swift-otel's own messages (a failed export, say) go where sync's lines go; its start-up
        // chatter does not, unless OTEL_LOG_LEVEL asks for it.
        configuration.diagnosticLogger = .custom(Logger(label: "courier.sync.otel"))
        configuration.diagnosticLogLevel = .warning
        do {
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(backend.factory)
            return Exporter(base: backend.service, logger: logger)
        } catch {
            complain("the OTEL_* variables do not make an exporter: \(error)")
            throw SysExit.unsafeConfiguration
        }
        #else
        complain("""
            OTEL_TRACES_EXPORTER=otlp: this sync was built without OTLP export (build it with \
            `swift build -c release --product sync --traits OTLP`), or unset OTEL_TRACES_EXPORTER
            """)
        throw SysExit.unsafeConfiguration
        #endif
    }

    /// Runs `body` with the exporter of ``bootstrap(environment:logger:)`` running beside it,
    /// then flushes: every span ended before `body` returned (or threw) is exported before this
    /// returns, or the wait ends after ``flushLimit`` with a warning. Without OTEL_* it is `body`.
    static func exporting<T>(logger: Logger, _ body: () async throws -> T) async throws -> T {
        guard let service = try bootstrap(logger: logger) else { return try await body() }
        // The lifecycle's own debug lines are not sync's: kept out of --log-level debug.
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .info)
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: quiet))
        let running = Task { try await group.run() }
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        await flush(group, running: running, logger: logger)
        return try result.get()
    }

    /// Shuts `group` down gracefully, which exports what its processor holds, waiting at most
    /// ``flushLimit``.
    static func flush(_ group: ServiceGroup, running: Task<Void, any Error>, logger: Logger) async {
        await group.triggerGracefulShutdown()
        let finished = await withTaskGroup(of: Bool.self) { waits in
            waits.addTask {
                _ = await running.result
                return true
            }
            waits.addTask {
                try? await Task.sleep(for: flushLimit)
                return false
            }
            let first = await waits.next() ?? false
            // Awaiting a task's result does not end when the waiter is cancelled: the task
            // itself is, so the group can return.
            if !first { running.cancel() }
            waits.cancelAll()
            return first
        }
        if !finished {
            logger.warning("spans not exported within \(flushLimit): the OTLP receiver did not answer in time")
        }
    }
}

/// The exporter's service, so that it never ends the group it runs in: a service group ends
/// every service when one returns or throws, and spans are not worth `sync run`'s queue. An
/// exporter that stops early is logged, then waits for the group's shutdown like the others.
struct Exporter: Service {
    let base: any Service
    let logger: Logger

    func run() async throws {
        do {
            try await base.run()
        } catch where !Task.isCancelled {
            logger.error("the span exporter stopped; spans are no longer exported", metadata: ["error": "\(error)"])
        } catch {
            // Cancelled: a flush that ran out of time, which says so itself.
        }
        // Returned before the shutdown (or threw): wait for it, as a running service does (at
        // once when it has begun).
        try? await gracefulShutdown()
    }
}
