import Foundation
import HTTPCore
import Logging

/// A client over `transport` at `https://api.test`.
func makeClient(_ transport: any Transport, plugins: [any Plugin] = [], interceptors: [any Interceptor] = []) -> APIClient {
    APIClient(
        configuration: ClientConfiguration(baseURL: URL(string: "https://api.test")!, plugins: plugins, interceptors: interceptors),
        transport: transport
    )
}

/// Keeps every log line, with its metadata, in memory.
final class CapturedLogs: Sendable {
    private let lines = LockedBox<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.current }
    var text: String { all.joined(separator: "\n") }

    func logger() -> Logger {
        Logger(label: "test") { _ in CapturingHandler(sink: self) }
    }
}

struct CapturingHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        sink.append("\(event.level) \(event.message) \(fields)")
    }
}
