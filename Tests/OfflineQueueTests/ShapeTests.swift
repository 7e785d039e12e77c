import Foundation
import Testing

/// The faces the repository keeps small (issue 70), read from the sources as a reviewer counts
/// them, so a type, a requirement or a call method added past a limit fails here rather than in
/// a review.
@Suite("Shape: the faces kept small, the core by concern")
struct ShapeTests {
    /// The repository's root: three folders up from this file.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift files under `folder` (relative to the root), with their text.
    static func sources(_ folder: String) throws -> [(path: String, text: String)] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { return [] }
        var found: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            found.append((String(url.path.dropFirst(root.path.count + 1)), try String(contentsOf: url, encoding: .utf8)))
        }
        return found.sorted { $0.0 < $1.0 }
    }

    /// Lines of `text` matching `pattern` (a regular expression, anchored by the caller).
    static func lines(_ text: String, matching pattern: String) throws -> [String] {
        let expression = try NSRegularExpression(pattern: pattern)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { line in
            expression.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil
        }
    }

    @Test("OfflineQueueCore has at most 60 top-level public types, counted as `public struct|enum|class|actor|protocol|typealias` at the start of a line")
    func corePublicTypes() throws {
        var types: [String] = []
        for (path, text) in try Self.sources("Modules/OfflineQueueCore") {
            types += try Self.lines(text, matching: #"^public (final )?(struct|enum|class|actor|protocol|typealias) "#).map { "\(path): \($0)" }
        }
        #expect(types.count <= 60, "\(types.count) public types:\n\(types.joined(separator: "\n"))")
    }

    @Test("the storage contract has at most 25 requirements, and Writing a store lists each of them")
    func storageContract() throws {
        var requirements: [String] = []
        for (_, text) in try Self.sources("Modules/OfflineQueueCore/Storage") {
            var inside = false
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                // `QueueStorage` and the roles it refines (with the body reading the drain's refines);
                // not `QueueStoreParts`, the finer parts this package's own stores are written in.
                let roles = ["QueueStorage", "QueueDrainStorage", "QueueBodyReading", "QueueEnqueueStorage", "QueueOperatorStorage",
                             "QueueOutcomeStorage", "QueueSealStorage", "QueueUpkeepStorage"]
                if roles.contains(where: { line.hasPrefix("package protocol \($0):") }) { inside = true; continue }
                if inside && line.hasPrefix("}") { inside = false; continue }
                guard inside else { continue }
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                for keyword in ["func ", "var "] where trimmed.hasPrefix(keyword) {
                    let name = trimmed.dropFirst(keyword.count).prefix { $0.isLetter || $0.isNumber }
                    requirements.append(String(name))
                }
            }
        }
        #expect(requirements.count <= 25, "\(requirements.count) requirements: \(requirements)")
        #expect(requirements.count >= 20, "the parser found the protocols")
        let guide = try String(contentsOf: Self.root.appendingPathComponent("Docs/WritingAStore.md"), encoding: .utf8)
        for name in requirements {
            #expect(guide.contains("`\(name)"), "Docs/WritingAStore.md does not list \(name)")
        }
    }

    @Test("APIClient has at most 12 public call methods in HTTPCore; the completion handlers are CombineAdapters'")
    func httpCoreCalls() throws {
        var calls: [String] = []
        for (path, text) in try Self.sources("Modules/HTTPCore/Client") where path.contains("APIClient") {
            calls += try Self.lines(text, matching: #"^    public func "#).map { "\(path): \($0.trimmingCharacters(in: .whitespaces))" }
        }
        #expect(calls.count <= 12, "\(calls.count) call methods:\n\(calls.joined(separator: "\n"))")
        let completions = try Self.sources("Modules/HTTPCore").filter { $0.text.contains("completion: @escaping") }
        #expect(completions.isEmpty, "completion-handler calls in HTTPCore: \(completions.map(\.path))")
    }

    @Test("each folder of OfflineQueueCore names one concern and holds at most 20 files; no Engine or Model catch-all")
    func coreFolders() throws {
        let files = try Self.sources("Modules/OfflineQueueCore")
        let folders = Dictionary(grouping: files) { URL(fileURLWithPath: $0.path).deletingLastPathComponent().lastPathComponent }
        for (folder, files) in folders {
            #expect(files.count <= 20, "\(folder) holds \(files.count) files")
        }
        #expect(folders["Engine"] == nil && folders["Model"] == nil)
        #expect(folders.count >= 8, "\(folders.keys.sorted())")
    }

    @Test("one clock: in OfflineQueueCore only QueueClock reads the boot clock; sync writes no JSON by JSONSerialization")
    func oneClockAndCodable() throws {
        let readers = try Self.sources("Modules/OfflineQueueCore").filter { $0.text.contains("BootClock.uptime()") }.map(\.path)
        #expect(readers == ["Modules/OfflineQueueCore/Queue/QueueClock.swift"], "\(readers)")
        let serializers = try Self.sources("Tools/sync").filter { $0.text.contains("JSONSerialization") }.map(\.path)
        #expect(serializers.isEmpty, "\(serializers)")
    }
}
