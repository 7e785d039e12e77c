import ArgumentParser
import Foundation
import OfflineQueue

/// What a command returns: printed by ``Runner`` as one JSON document with `--json` (its
/// `Encodable` form, whose keys scripts read), as text for people otherwise.
protocol Report: Encodable {
    /// Prints the report as text (`sync` without `--json`).
    func printText()

    /// Ends the command as the report says, once it is printed: throws the exit status of an
    /// outcome that is not plain success (75 entries remain, 3 dead…). Returns by default.
    func finish() throws
}

extension Report {
    func finish() throws {}
}

/// The one way a command runs: opens the queue where it needs one, makes the command's report,
/// turns a queue error into one line on standard error and its sysexits status (``sysExit(for:)``),
/// prints the report as JSON or text, and exits as the report says.
enum Runner {
    /// A command of the queue: the queue is opened as `access` says (and closed after `make`).
    /// `json`: whether to print JSON, `--json` unless given.
    static func run(
        _ options: QueueOptions, _ access: QueueAccess, json: Bool? = nil, _ make: (OfflineQueue) async throws -> any Report
    ) async throws {
        let report = try await mappingErrors { try await options.withQueue(access, make) }
        try emit(report, json: json ?? options.json)
    }

    /// A command that runs until stopped and prints no report (`sync run`, `sync console`).
    static func serve(_ options: QueueOptions, _ access: QueueAccess, _ body: (OfflineQueue) async throws -> Void) async throws {
        try await mappingErrors { try await options.withQueue(access, body) }
    }

    /// A command without a queue (`sync keys new|add|list`), or whose report is made already.
    static func emit(_ report: any Report, json: Bool) throws {
        if json { Output.json(report) } else { report.printText() }
        try report.finish()
    }

    /// Runs `body`, turning queue errors into one line on standard error and a sysexits status.
    private static func mappingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as QueueError {
            throw sysExit(for: error)
        }
    }
}

/// A value JSON shows as `null` when it is absent; a plain optional is left out instead.
@propertyWrapper
struct OrNull<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

/// A time as JSON shows it: ISO 8601 with milliseconds, UTC (``Output/iso(_:)``).
struct Timestamp: Encodable {
    var date: Date

    init(_ date: Date) {
        self.date = date
    }

    init?(_ date: Date?) {
        guard let date else { return nil }
        self.date = date
    }

    var text: String { Output.iso(date) }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
