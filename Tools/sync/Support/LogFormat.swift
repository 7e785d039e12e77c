import ArgumentParser
import Foundation
import Logging

/// How `sync run` and `sync console` write their log lines to standard error.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case logfmt
    case json
}

/// `--log-format` and `--log-level`: how `sync run`, `sync drain` and `sync console` log.
struct LogOptions: ParsableArguments {
    @Option(name: .long, help: "Log lines as logfmt or json.")
    var logFormat: LogFormat = .logfmt

    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical. debug adds a line per attempt, with its trace_id and span_id.")
    var logLevel: String = "info"

    func validate() throws {
        _ = try LineLogHandler.level(logLevel)
    }

    /// Makes every logger of the process write lines to standard error as the options say.
    func bootstrap() {
        LineLogHandler.bootstrap(format: logFormat, level: Logger.Level(rawValue: logLevel) ?? .info)
    }
}

/// A swift-log handler writing one line per message to standard error, as logfmt
/// (`ts=… level=info msg="drained" delivered=12`) or as a JSON object.
struct LineLogHandler: LogHandler {
    let label: String
    let format: LogFormat
    var logLevel: Logger.Level = .info

    /// Makes every logger of the process write lines of `format` at `level` and above (once,
    /// at a command's start: `sync run`, `sync console`).
    static func bootstrap(format: LogFormat, level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = LineLogHandler(label: label, format: format)
            handler.logLevel = level
            return handler
        }
    }

    /// `--log-level`'s check: one of swift-log's level names.
    static func level(_ name: String) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: name) else { throw ValidationError("--log-level \(name) is not a level") }
        return level
    }
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let time = Output.iso(Date())
        let line: String
        switch format {
        case .logfmt:
            var parts = ["ts=\(time)", "level=\(event.level)", "msg=\(Self.quote(event.message.description))"]
            for key in fields.keys.sorted() { parts.append("\(key)=\(Self.quote(fields[key]!.description))") }
            // Error messages may quote a server's answer: nothing in it reaches the terminal raw.
            line = Output.terminalSafe(parts.joined(separator: " "))
        case .json:
            var object: [String: String] = ["ts": time, "level": "\(event.level)", "msg": event.message.description, "logger": label]
            for (key, value) in fields { object[key] = value.description }
            line = String(decoding: Output.jsonData(object), as: UTF8.self)
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// A logfmt value: bare when it has no space, quote or equals sign; quoted otherwise.
    static func quote(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) else { return value }
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
        return "\"\(escaped)\""
    }
}
