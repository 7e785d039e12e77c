import Foundation
import Testing
import TestSupport

/// Docs/sync.md in step with `sync --help`: every option a command shows in its help is on the
/// page, in that command's section (`### \`sync NAME …`), or, for the options every queue
/// command shares (`--db`, `--json`, `--keyring`, `--sealing`), before "## Commands".
@Suite("sync: Docs/sync.md names every option of every command")
struct SyncDocsTests {
    static let page = SyncPackageTests.root.appendingPathComponent("Docs/sync.md")

    /// A command of the tree swift-argument-parser dumps (`--experimental-dump-help`): its path
    /// and the long names of the options its help shows.
    struct Command {
        var path: [String]
        var options: [String]
    }

    static func commands(in node: [String: Any], path: [String] = []) -> [Command] {
        let arguments = node["arguments"] as? [[String: Any]] ?? []
        var options: [String] = []
        for argument in arguments where argument["shouldDisplay"] as? Bool ?? true {
            for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                let option = "--" + (name["name"] as? String ?? "")
                if option != "--help" && option != "--version" { options.append(option) }
            }
        }
        let children = (node["subcommands"] as? [[String: Any]] ?? []).flatMap { child in
            commands(in: child, path: path + [child["commandName"] as? String ?? ""])
        }
        return [Command(path: path, options: options)] + children
    }

    /// The page's sections: each heading (`## ` or `### `) with its text up to the next one.
    static func sections(of text: String) -> (preamble: String, sections: [(heading: String, text: String)]) {
        var preamble = ""
        var sections: [(heading: String, text: String)] = []
        var inCommands = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") || line.hasPrefix("### ") {
                if line == "## Commands" { inCommands = true }
                sections.append((String(line), String(line) + "\n"))
            } else if !sections.isEmpty {
                sections[sections.count - 1].text += line + "\n"
            }
            if !inCommands { preamble += line + "\n" }
        }
        return (preamble, sections)
    }

    /// Whether `text` names `option` as a whole word (`--proxy` is not in `--proxy-url`).
    static func names(_ text: String, _ option: String) -> Bool {
        var rest = text[...]
        while let range = rest.range(of: option) {
            let next = rest[range.upperBound...].first
            if next == nil || !(next!.isLetter || next!.isNumber || next! == "-") { return true }
            rest = rest[range.upperBound...]
        }
        return false
    }

    @Test("each command's options, as its help shows them, are in its section of Docs/sync.md")
    func everyOption() async throws {
        let dump = try await SyncRunner(database: "/nonexistent/unused.db").run(["--experimental-dump-help"])
        #expect(dump.status == 0, "\(dump.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let tree = try #require(root["command"] as? [String: Any])
        let (preamble, sections) = Self.sections(of: try String(contentsOf: Self.page, encoding: .utf8))
        let commands = Self.commands(in: tree).filter { !$0.path.isEmpty && $0.path != ["help"] }
        #expect(commands.count >= 20, "the dump holds every command: \(commands.map(\.path))")
        for command in commands {
            var own = sections.filter { $0.heading.hasPrefix("### ") && $0.heading.contains("`sync \(command.path[0])") }
            if command.path.count > 1 {
                let named = own.filter { section in
                    section.heading.split(whereSeparator: { !$0.isLetter && $0 != "-" }).contains { $0 == command.path[1] }
                }
                if !named.isEmpty { own = named }
            }
            let name = "sync " + command.path.joined(separator: " ")
            #expect(!own.isEmpty, "Docs/sync.md has no section for \(name)")
            let text = own.map(\.text).joined()
            let missing = command.options.filter { !Self.names(text, $0) && !Self.names(preamble, $0) }
            #expect(missing.isEmpty, "\(name): \(missing.joined(separator: ", ")) in its help but not in its section of Docs/sync.md")
        }
    }
}
