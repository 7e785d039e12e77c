import Foundation
import HTTPCore
import Testing
import TestSupport

/// Every `sync` command's `--json` output against a sample recorded from the binary before its
/// commands returned reports (Samples/NAME.json): scripts read these keys, so a key renamed or
/// dropped, a value of another JSON type, an array in another order or another number format
/// fails here. What varies from run to run (timestamps, UUIDs, ports, the temporary folder,
/// key ids and check values) is replaced by a placeholder in both before they are compared.
///
/// `SYNC_RECORD_JSON_SAMPLES=1 swift test --filter SyncJSONSampleTests` writes the samples
/// again from the binary as it is; only for a change of the output that is meant.
@Suite("sync: every command's --json output keeps its recorded keys, types and order")
struct SyncJSONSampleTests {
    /// Where the samples are: beside this file.
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Samples")

    /// Values that vary between runs by more than a placeholder can say, by key or by path
    /// (`SAMPLE.key`): compared by JSON type only. An origin's entry held by its open circuit
    /// counts in `due_held_by_flow` only once its own backoff, which is random, has passed; and
    /// the broken origin's failures are one, or two when its circuit's probe came due before the
    /// drain ended (a loaded machine's drain takes longer: 3 failed instead of 2 once beside the
    /// whole suite).
    static let typeOnly: Set<String> = [
        "oldest_pending_age_seconds", "stats-flow.due", "stats-flow.due_held_by_flow", "drain-flow.failed",
        "stats-flow.origins[1].failures", "stats-flow.origins[1].circuit.failures",
    ]

    /// Arrays ordered by random key ids (sorted, so in another order each run): compared as sets.
    static let unordered: Set<String> = ["held", "missing", "other_bytes"]

    /// What the runs printed, and how they are normalised.
    final class Recorder {
        var outputs: [(name: String, text: String)] = []
        var literals: [(String, String)] = []

        /// Runs `sync` with `arguments` and keeps its standard output as sample `name`.
        @discardableResult
        func record(_ name: String, _ sync: SyncRunner, _ arguments: [String], status: Int32 = 0) async throws -> [String: Any] {
            let result = try await sync.run(arguments)
            #expect(result.status == status, "\(name): \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
            outputs.append((name, result.stdout))
            return (try? result.json() as? [String: Any]) ?? [:]
        }

        /// `text` with what varies replaced: the literals given (longest first), then
        /// timestamps and UUIDs.
        func normalised(_ text: String) -> String {
            var text = text
            for (literal, placeholder) in literals.sorted(by: { $0.0.count > $1.0.count }) {
                text = text.replacingOccurrences(of: literal, with: placeholder)
            }
            text = text.replacingOccurrences(of: #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"#, with: "<time>", options: .regularExpression)
            text = text.replacingOccurrences(of: #"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"#, with: "<uuid>", options: .regularExpression)
            return text
        }
    }

    @Test("enqueue, list, show, stats, wait, drain, retry, purge, release, pause, resume and keys print the recorded JSON")
    func samples() async throws {
        let folder = try makeTemporaryFolder("sync-json")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestHTTPServer.start()
        let recorder = Recorder()
        recorder.literals = [(folder.path, "<folder>"), ("127.0.0.1:\(server.port)", "127.0.0.1:<port>"), ("localhost:\(server.port)", "localhost:<port>")]
        server.route("/notes") { _, writer in
            try await writer.respond(
                status: 201, headers: [HeaderField(name: "Location", value: "/notes/7"), HeaderField(name: "Content-Type", value: "application/json")],
                body: Data("{\"id\":7,\"text\":\"a/b\"}".utf8)
            )
        }
        server.script("/refused", status: 422)
        server.route("/busy") { _, writer in try await writer.respond(status: 503, headers: [HeaderField(name: "Retry-After", value: "120")]) }
        server.script("/broken", status: 500)
        func url(_ path: String) -> String { server.url(path).absoluteString }

        // The queue's commands on a SQLite file.
        var sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        sync.environment["CREDENTIALS_DIRECTORY"] = ""
        var traced = sync
        traced.environment["TRACEPARENT"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        traced.environment["TRACESTATE"] = "vendor=value"
        try await recorder.record("enqueue", traced, [
            "--json", "enqueue", "POST", url("/notes"), "-H", "Content-Type: application/json", "--data", "{\"n\":1}",
            "--group", "g", "--name", "POST /notes", "--priority", "2", "--keep-header", "location", "--idempotency-key", "note-1",
        ])
        try await recorder.record("enqueue-deduplicated", sync, ["--json", "enqueue", "POST", url("/notes"), "--idempotency-key", "note-1"])
        try await recorder.record("enqueue-after", sync, [
            "--json", "enqueue", "PUT", url("/echo/notes") + "/${response:1:/id}", "--after", "1", "--when-parent-dies", "proceed",
            "--data", "{\"n\": ${response:1:/id}}",
        ])
        try await recorder.record("enqueue-replace", sync, ["--json", "enqueue", "PUT", url("/echo/drafts/7"), "--data", "draft 1", "--replace", "draft-7"])
        try await recorder.record("enqueue-replaced", sync, ["--json", "enqueue", "PUT", url("/echo/drafts/7"), "--data", "draft 2", "--replace", "draft-7"])
        try await recorder.record("enqueue-count", sync, ["--json", "enqueue", "POST", url("/refused"), "--count", "2"])
        let big = folder.appendingPathComponent("big.bin")
        try Data(repeating: 0x61, count: 70_000).write(to: big)
        try await recorder.record("enqueue-file", sync, ["--json", "enqueue", "PUT", url("/echo/files/a?token=s3cr3t"), "--data-file", big.path])
        try await recorder.record("enqueue-held", sync, ["--json", "enqueue", "POST", url("/echo"), "--group", "held", "-H", "Authorization: Bearer abc", "--store-secrets"])
        try await recorder.record("pause-group", sync, ["--json", "pause", "--group", "held"])
        try await recorder.record("pause-group-again", sync, ["--json", "pause", "--group", "held"])
        try await recorder.record("list", sync, ["--json", "list"])
        try await recorder.record("list-format-json", sync, ["list", "--format", "json", "--state", "pending", "--limit", "2"])
        try await recorder.record("show", sync, ["--json", "show", "1"])
        try await recorder.record("show-after", sync, ["--json", "show", "2"])
        try await recorder.record("show-replaced", sync, ["--json", "show", "3"])
        try await recorder.record("show-superseded", sync, ["--json", "show", "4"])
        try await recorder.record("show-file", sync, ["--json", "show", "7"])
        try await recorder.record("show-secrets", sync, ["--json", "show", "8", "--reveal-secrets"])
        try await recorder.record("stats", sync, ["--json", "stats"])
        try await recorder.record("wait-timeout", sync, ["--json", "wait", "1", "--timeout", "0"], status: 75)
        try await recorder.record("drain", sync, ["--json", "drain", "--no-reachability"], status: 75)
        try await recorder.record("show-delivered", sync, ["--json", "show", "1"])
        try await recorder.record("wait-delivered", sync, ["--json", "wait", "1"])
        try await recorder.record("wait-dead", sync, ["--json", "wait", "5"], status: 3)
        try await recorder.record("wait-superseded", sync, ["--json", "wait", "4"], status: 4)
        try await recorder.record("stats-drained", sync, ["--json", "stats"])
        try await recorder.record("retry-dry-run", sync, ["--json", "retry", "--dead", "--dry-run"])
        try await recorder.record("retry-ids", sync, ["--json", "retry", "5"])
        try await recorder.record("retry", sync, ["--json", "retry", "--dead"])
        try await recorder.record("purge-dry-run", sync, ["--json", "purge", "--delivered", "--dry-run"])
        try await recorder.record("purge-ids", sync, ["--json", "purge", "7"])
        try await recorder.record("wait-purged", sync, ["--json", "wait", "7"], status: 4)
        try await recorder.record("purge", sync, ["--json", "purge", "--delivered"])
        try await recorder.record("enqueue-blocked", sync, ["--json", "enqueue", "POST", url("/echo"), "--after", "5"])
        try await recorder.record("release", sync, ["--json", "release", "9"])
        try await recorder.record("release-stuck", sync, ["--json", "release", "--stuck"])
        try await recorder.record("resume-group", sync, ["--json", "resume", "--group", "held"])
        try await recorder.record("pause", sync, ["--json", "pause"])
        try await recorder.record("resume", sync, ["--json", "resume"])
        try await recorder.record("resume-again", sync, ["--json", "resume"])

        // Flow control: an origin paused by a 503's Retry-After, another whose circuit opened.
        let flowing = SyncRunner(database: folder.appendingPathComponent("flow.db").path, environment: ["CREDENTIALS_DIRECTORY": ""])
        try await recorder.record("enqueue-busy", flowing, ["--json", "enqueue", "POST", url("/busy")])
        try await recorder.record("enqueue-broken", flowing, ["--json", "enqueue", "POST", server.url("/broken", host: "localhost").absoluteString])
        try await recorder.record("drain-flow", flowing, ["--json", "drain", "--no-reachability", "--open-after", "1"], status: 75)
        try await recorder.record("stats-flow", flowing, ["--json", "stats"])
        try await recorder.record("resume-origin", flowing, ["--json", "resume", "--origin", "http://127.0.0.1:\(server.port)"])
        try await recorder.record("resume-origin-again", flowing, ["--json", "resume", "--origin", "http://127.0.0.1:\(server.port)"])

        // Keys: a keyring file, and a queue whose entries are sealed under it.
        let sealed = SyncRunner(database: folder.appendingPathComponent("sealed.db").path, environment: ["CREDENTIALS_DIRECTORY": ""])
        let keyring = folder.appendingPathComponent("queue.keyring").path
        try await recorder.record("enqueue-clear", sealed, ["--json", "enqueue", "POST", url("/echo"), "--data", "in clear"])
        try await recorder.record("keys-status", sealed, ["--json", "keys", "status"])
        let made = try await recorder.record("keys-new", sealed, ["--json", "keys", "new", "--keyring", keyring])
        let added = try await recorder.record("keys-add", sealed, ["--json", "keys", "add", "--keyring", keyring])
        try await recorder.record("keys-encrypt", sealed, ["--json", "keys", "encrypt", "--keyring", keyring])
        let third = try await recorder.record("keys-add-again", sealed, ["--json", "keys", "add", "--keyring", keyring])
        try await recorder.record("keys-list", sealed, ["--json", "keys", "list", "--keyring", keyring])
        try await recorder.record("keys-status-keyring", sealed, ["--json", "keys", "status", "--keyring", keyring])
        try await recorder.record("keys-rotate", sealed, ["--json", "keys", "rotate", "--keyring", keyring])
        try await recorder.record("show-sealed", sealed, ["--json", "show", "1", "--keyring", keyring])
        await server.shutdown()

        for (index, key) in [made, added, third].enumerated() {
            if let id = key["id"] as? String { recorder.literals.append((id, "<key\(index + 1)>")) }
            if let check = key["key_check_value"] as? String { recorder.literals.append((check, "<check\(index + 1)>")) }
        }
        let record = ProcessInfo.processInfo.environment["SYNC_RECORD_JSON_SAMPLES"] == "1"
        if record { try FileManager.default.createDirectory(at: Self.samples, withIntermediateDirectories: true) }
        for (name, raw) in recorder.outputs {
            let text = recorder.normalised(raw)
            let file = Self.samples.appendingPathComponent(name + ".json")
            if record {
                try Data(text.utf8).write(to: file)
                continue
            }
            #expect(raw.hasSuffix("}\n") || raw.hasSuffix("]\n"), "\(name): one document and a line feed: \(raw)")
            #expect(!raw.dropLast().contains("\n") && !raw.contains("\\/"), "\(name): one line, slashes unescaped: \(raw)")
            let output = try #require(try? JSONText.parse(raw), "\(name) is not JSON: \(raw)")
            #expect(output.unsortedObjects.isEmpty, "\(name): keys not sorted in \(output.unsortedObjects)")
            guard let sampleText = try? String(contentsOf: file, encoding: .utf8) else {
                Issue.record("no sample \(file.path): record it with SYNC_RECORD_JSON_SAMPLES=1")
                continue
            }
            let sample = try JSONText.parse(sampleText)
            let differences = JSONText.differences(
                sample, try JSONText.parse(text), at: name, typeOnly: Self.typeOnly, unordered: Self.unordered
            )
            #expect(differences.isEmpty, "\(name) differs from its sample:\n\(differences.joined(separator: "\n"))\noutput: \(text)")
        }
        if !record {
            let names = Set(recorder.outputs.map(\.name))
            let files = try FileManager.default.contentsOfDirectory(atPath: Self.samples.path).filter { $0.hasSuffix(".json") }
            #expect(Set(files.map { String($0.dropLast(5)) }) == names, "every sample is run, every run has a sample")
        }
    }

    @Test("the comparison fails on a key renamed or dropped, a value of another type, another number format, and another order")
    func comparisonCatchesChanges() throws {
        let sample = try JSONText.parse(#"{"a":[1,2],"b":{"c":null,"d":"x"},"e":1.5}"#)
        func differs(_ text: String) throws -> Bool { !JSONText.differences(sample, try JSONText.parse(text), at: "t", typeOnly: [], unordered: []).isEmpty }
        #expect(try !differs(#"{"a":[1,2],"b":{"c":null,"d":"x"},"e":1.5}"#))
        #expect(try differs(#"{"a":[1,2],"b":{"c":null,"dd":"x"},"e":1.5}"#))
        #expect(try differs(#"{"a":[1,2],"b":{"c":null},"e":1.5}"#))
        #expect(try differs(#"{"a":[1,2],"b":{"c":0,"d":"x"},"e":1.5}"#))
        #expect(try differs(#"{"a":[2,1],"b":{"c":null,"d":"x"},"e":1.5}"#))
        #expect(try differs(#"{"a":[1,2],"b":{"c":null,"d":"x"},"e":1.50}"#))
        #expect(try JSONText.parse(#"{"b":1,"a":2}"#).unsortedObjects == ["$"])
    }
}

/// JSON as written: each number and string as its text, each object's keys in their order, so
/// that two documents compare by what a script reading them would see.
indirect enum JSONText {
    case null, bool(Bool), number(String), string(String), array([JSONText]), object([(key: String, value: JSONText)])

    struct Malformed: Error {}

    static func parse(_ text: String) throws -> JSONText {
        var parser = Parser(bytes: Array(text.utf8))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw Malformed() }
        return value
    }

    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number(let text): text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? "fractional number" : "integer"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The paths of objects whose keys are not in ascending order.
    var unsortedObjects: [String] {
        func walk(_ value: JSONText, _ path: String) -> [String] {
            switch value {
            case .array(let items): return items.enumerated().flatMap { walk($0.element, "\(path)[\($0.offset)]") }
            case .object(let members):
                let keys = members.map(\.key)
                return (keys == keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) ? [] : [path])
                    + members.flatMap { walk($0.value, "\(path).\($0.key)") }
            default: return []
            }
        }
        return walk(self, "$")
    }

    /// The text of a string, a number or a literal, for sorting.
    var scalarText: String {
        switch self {
        case .string(let text), .number(let text): text
        default: kind
        }
    }

    /// How `actual` differs from `sample`, one line per difference with its path; values under
    /// a key of `typeOnly` are compared by type, arrays under a key of `unordered` as sets.
    static func differences(
        _ sample: JSONText, _ actual: JSONText, at path: String, typeOnly: Set<String>, unordered: Set<String>, key: String? = nil
    ) -> [String] {
        guard sample.kind == actual.kind else { return ["\(path): \(sample.kind) in the sample, \(actual.kind) now"] }
        switch (sample, actual) {
        case (.object(let expected), .object(let got)):
            let expectedKeys = expected.map(\.key)
            let gotKeys = got.map(\.key)
            var lines = expectedKeys.filter { !gotKeys.contains($0) }.map { "\(path): key \($0) is missing" }
            lines += gotKeys.filter { !expectedKeys.contains($0) }.map { "\(path): key \($0) is not in the sample" }
            for member in expected {
                guard let other = got.first(where: { $0.key == member.key }) else { continue }
                lines += differences(member.value, other.value, at: "\(path).\(member.key)", typeOnly: typeOnly, unordered: unordered, key: member.key)
            }
            return lines
        case (.array(var expected), .array(var got)):
            guard expected.count == got.count else { return ["\(path): \(expected.count) elements in the sample, \(got.count) now"] }
            if key.map(unordered.contains) == true {
                expected.sort { $0.scalarText < $1.scalarText }
                got.sort { $0.scalarText < $1.scalarText }
            }
            return zip(expected, got).enumerated().flatMap {
                differences($0.element.0, $0.element.1, at: "\(path)[\($0.offset)]", typeOnly: typeOnly, unordered: unordered)
            }
        case (.number(let expected), .number(let got)):
            return expected == got || key.map(typeOnly.contains) == true || typeOnly.contains(path) ? [] : ["\(path): \(expected) in the sample, \(got) now"]
        case (.string(let expected), .string(let got)):
            return expected == got || key.map(typeOnly.contains) == true || typeOnly.contains(path) ? [] : ["\(path): \"\(expected)\" in the sample, \"\(got)\" now"]
        case (.bool(let expected), .bool(let got)):
            return expected == got ? [] : ["\(path): \(expected) in the sample, \(got) now"]
        default:
            return []
        }
    }

    struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
        }

        mutating func literal(_ word: String) throws {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else { throw Malformed() }
            index += expected.count
        }

        /// A string's text as written between its quotes, escapes and all.
        mutating func string() throws -> String {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Malformed() }
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard index < bytes.count else { throw Malformed() }
            defer { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func value() throws -> JSONText {
            skipSpace()
            guard index < bytes.count else { throw Malformed() }
            switch bytes[index] {
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                index += 1
                var items: [JSONText] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                while true {
                    items.append(try value())
                    skipSpace()
                    guard index < bytes.count else { throw Malformed() }
                    index += 1
                    if bytes[index - 1] == UInt8(ascii: "]") { return .array(items) }
                    guard bytes[index - 1] == UInt8(ascii: ",") else { throw Malformed() }
                }
            case UInt8(ascii: "{"):
                index += 1
                var members: [(key: String, value: JSONText)] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    let key = try string()
                    skipSpace()
                    try literal(":")
                    members.append((key, try value()))
                    skipSpace()
                    guard index < bytes.count else { throw Malformed() }
                    index += 1
                    if bytes[index - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[index - 1] == UInt8(ascii: ",") else { throw Malformed() }
                }
            default:
                let start = index
                while index < bytes.count, "-+.eE0123456789".utf8.contains(bytes[index]) { index += 1 }
                guard index > start else { throw Malformed() }
                return .number(String(decoding: bytes[start..<index], as: UTF8.self))
            }
        }
    }
}
