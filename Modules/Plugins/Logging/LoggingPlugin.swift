public import HTTPCore
public import Logging
public import Foundation
import HTTPTypes

/// Logs each call through swift-log: method, URL, status, duration and sizes, with secrets
/// redacted (Aphrodite's logger plugin, Leash's logger interceptor).
///
/// The request line is logged at `requestLevel` before each exchange; the outcome once, at
/// `responseLevel` (or `failureLevel` for errors). Secret headers and query parameters are
/// replaced by ``Redaction``; bodies are logged only when ``bodyLimit`` is above zero, and then
/// truncated.
///
/// ```swift
/// var logging = LoggingPlugin(logger: Logger(label: "api"))
/// logging.redaction.queryParameters.insert("sig")
/// logging.bodyLimit = 512
/// configuration.plugins.append(logging)
/// ```
public struct LoggingPlugin: Plugin {
    /// Where lines go; its log level decides which lines are built at all.
    public var logger: Logger
    /// What is hidden.
    public var redaction: Redaction
    /// Whether header fields are logged (redacted) as metadata.
    public var logsHeaders: Bool
    /// How many body bytes are logged; 0 logs no body.
    public var bodyLimit: Int
    /// The level of the line logged before each exchange; `debug` unless given.
    public var requestLevel: Logger.Level
    /// The level of the line logged when a call gets its response; `info` unless given.
    public var responseLevel: Logger.Level
    /// The level of the line logged when a call fails; `error` unless given.
    public var failureLevel: Logger.Level
    public var scope: PluginScope

    /// A plugin that logs to `logger` (labelled `courier.http` unless given), for endpoints in
    /// `scope`. Unless given: the standard redaction, header fields logged, and no bodies.
    public init(
        logger: Logger = Logger(label: "courier.http"),
        redaction: Redaction = .standard,
        logsHeaders: Bool = true,
        bodyLimit: Int = 0,
        requestLevel: Logger.Level = .debug,
        responseLevel: Logger.Level = .info,
        failureLevel: Logger.Level = .error,
        scope: PluginScope = .universal
    ) {
        self.logger = logger
        self.redaction = redaction
        self.logsHeaders = logsHeaders
        self.bodyLimit = bodyLimit
        self.requestLevel = requestLevel
        self.responseLevel = responseLevel
        self.failureLevel = failureLevel
        self.scope = scope
    }

    public func willSend(_ request: PreparedRequest, context: CallContext) async {
        guard logger.logLevel <= requestLevel else { return }
        var metadata: Logger.Metadata = ["endpoint": "\(redaction.redactQuery(of: context.endpointName))", "attempt": "\(context.attempt)"]
        if logsHeaders { metadata["headers"] = .array(redaction.describe(headers: request.headers).map { .string($0) }) }
        if bodyLimit > 0, case .data(let data) = request.body?.source {
            metadata["body"] = "\(excerpt(data))"
        }
        logger.log(level: requestLevel, "→ \(request.head.method.rawValue) \(target(request.head))", metadata: metadata)
    }

    public func didReceive(_ result: Result<Response<Data>, NetworkError>, for request: PreparedRequest, context: CallContext) async {
        let level: Logger.Level
        if case .failure = result { level = failureLevel } else { level = responseLevel }
        // Building the line and its metadata costs more than the call's own work: skip it
        // when the logger would drop the message anyway.
        guard logger.logLevel <= level else { return }
        let milliseconds = (ContinuousClock.now - context.startedAt).seconds * 1000
        let line = "\(request.head.method.rawValue) \(target(request.head))"
        switch result {
        case .success(let response):
            var metadata: Logger.Metadata = [
                "status": "\(response.status.code)",
                "duration_ms": "\(String(format: "%.1f", milliseconds))",
                "bytes": "\(response.metrics.bytesReceived)",
                "attempts": "\(response.metrics.attempts)",
            ]
            if logsHeaders { metadata["headers"] = .array(redaction.describe(headers: response.headers).map { .string($0) }) }
            if bodyLimit > 0, !response.body.isEmpty { metadata["body"] = "\(excerpt(response.body))" }
            logger.log(level: responseLevel, "← \(response.status.code) \(line)", metadata: metadata)
        case .failure(let error):
            var metadata: Logger.Metadata = ["duration_ms": "\(String(format: "%.1f", milliseconds))"]
            if let status = error.status { metadata["status"] = "\(status.code)" }
            if bodyLimit > 0, let body = error.response?.body, !body.isEmpty { metadata["body"] = "\(excerpt(body))" }
            logger.log(level: failureLevel, "✕ \(line): \(redaction.redactQuery(of: "\(error)"))", metadata: metadata)
        }
    }

    private func target(_ head: HTTPRequest) -> String {
        let url = "\(head.scheme ?? "http")://\(head.authority ?? "")\(head.path ?? "")"
        return redaction.redactQuery(of: url)
    }

    private func excerpt(_ data: Data) -> String {
        let text = String(decoding: data.prefix(bodyLimit), as: UTF8.self)
        return data.count > bodyLimit ? text + "… (\(data.count) bytes)" : text
    }
}
