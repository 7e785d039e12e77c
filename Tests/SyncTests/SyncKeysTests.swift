import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync keys new`, `add` and `list`, run as a user would: files, modes, exit codes, and no
/// key bytes in anything printed; the command lines of `status`, `rotate` and `encrypt`
/// (what they do to a queue is in SyncSealingTests).
@Suite("sync keys: make, rotate and list a keyring")
struct SyncKeysTests {
    /// A folder for the keyring, and `sync` with no systemd credentials. The queue database is
    /// never opened by these commands: `database` must not appear.
    struct Fixture {
        let folder: URL
        var sync: SyncRunner
        var database: String { sync.database }

        init() throws {
            folder = try makeTemporaryFolder("sync-keys")
            sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
            sync.environment["CREDENTIALS_DIRECTORY"] = ""
        }

        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

        func finish() {
            #expect(!FileManager.default.fileExists(atPath: database), "no queue database was made")
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// The file's permission bits.
    static func mode(_ path: String) -> UInt32 {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return UInt32(info.st_mode) & 0o7777
    }

    /// The base64 key field of every key line in the keyring file at `path`.
    static func keyFields(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard !line.hasPrefix("#"), fields.count >= 2 else { return nil }
            return String(fields[1])
        }
    }

    /// `sync --json keys list` as (id, primary, key-check value) triples.
    static func listed(_ sync: SyncRunner, _ arguments: String...) async throws -> [(id: String, primary: Bool, check: String)] {
        let result = try await sync.run(["--json", "keys", "list"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        let keys = try #require(try result.json() as? [[String: Any]])
        return try keys.map { key in
            (try #require(key["id"] as? String), try #require(key["primary"] as? Bool), try #require(key["key_check_value"] as? String))
        }
    }

    @Test("new makes a 0600 file with one primary key, and prints its id and key-check value")
    func new() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let keyring = fixture.path("queue.keyring")
        let made = try await fixture.sync("keys", "new", "--keyring", keyring)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(Self.mode(keyring) == 0o600)
        let keys = try await Self.listed(fixture.sync, "--keyring", keyring)
        try #require(keys.count == 1)
        #expect(keys[0].primary)
        #expect(keys[0].id.count == 8 && keys[0].check.count == 32)
        #expect(made.stdout == "created \(keyring) (mode 0600)\n\(keys[0].id)  primary       check=\(keys[0].check)\n")

        let text = try await fixture.sync("keys", "list", "--keyring", keyring)
        #expect(text.status == 0)
        #expect(text.stdout == "\(keys[0].id)  primary       check=\(keys[0].check)\n")
    }

    @Test("add twice: three keys with distinct ids, the newest the only primary; --json before or after the command")
    func addTwice() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let keyring = fixture.path("queue.keyring")
        let made = try await fixture.sync("--json", "keys", "new", "--keyring", keyring)
        let first = try #require(try made.json() as? [String: Any])
        #expect(first["keyring"] as? String == keyring)
        var added = [String]()
        for _ in 1...2 {
            let result = try await fixture.sync("keys", "add", "--keyring", keyring, "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let object = try #require(try result.json() as? [String: Any])
            added.append(try #require(object["id"] as? String))
        }
        #expect(Self.mode(keyring) == 0o600, "the replacement file is private too")
        let keys = try await Self.listed(fixture.sync, "--keyring", keyring)
        #expect(keys.map(\.id) == [try #require(first["id"] as? String)] + added)
        #expect(Set(keys.map(\.id)).count == 3)
        #expect(Set(keys.map(\.check)).count == 3)
        #expect(keys.filter(\.primary).map(\.id) == [added[1]])

        let text = try await fixture.sync("keys", "add", "--keyring", keyring)
        #expect(text.status == 0)
        #expect(text.stdout.hasPrefix("added a primary key to \(keyring); 3 older keys stay, decrypt-only\n"))
        let listing = try await fixture.sync("keys", "list", "--keyring", keyring)
        #expect(listing.stdout.split(separator: "\n").filter { $0.contains("decrypt-only") }.count == 3)
    }

    @Test("new refuses an existing file or link (exit 73) and changes no byte of it")
    func newRefusesToOverwrite() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let keyring = fixture.path("queue.keyring")
        #expect(try await fixture.sync("keys", "new", "--keyring", keyring).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: keyring))
        let refused = try await fixture.sync("keys", "new", "--keyring", keyring)
        #expect(refused.status == 73)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr == "sync: \(keyring) already exists; a new keyring is never written over a file\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyring)) == before)

        let other = fixture.path("notes.txt")
        try Data("not a keyring\n".utf8).write(to: URL(fileURLWithPath: other))
        #expect(try await fixture.sync("keys", "new", "--keyring", other).status == 73)
        #expect(try String(contentsOfFile: other, encoding: .utf8) == "not a keyring\n")

        let link = fixture.path("dangling.keyring")
        let target = fixture.path("target.keyring")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(try await fixture.sync("keys", "new", "--keyring", link).status == 73)
        #expect(!FileManager.default.fileExists(atPath: target), "nothing written through the link")
    }

    @Test("a 0644 keyring is refused by list and add with its path and mode (exit 78); add changes nothing")
    func unsafeMode() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let keyring = fixture.path("queue.keyring")
        #expect(try await fixture.sync("keys", "new", "--keyring", keyring).status == 0)
        chmod(keyring, 0o644)
        let before = try Data(contentsOf: URL(fileURLWithPath: keyring))
        for command in ["list", "add"] {
            let refused = try await fixture.sync("keys", command, "--keyring", keyring)
            #expect(refused.status == 78, "\(command): \(refused.stderr)")
            #expect(refused.stdout.isEmpty)
            #expect(refused.stderr == "sync: refusing keyring \(keyring) (mode 644): other users may read or write it; chmod 600 it\n")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyring)) == before)
        #expect(Self.mode(keyring) == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path) == ["queue.keyring"], "no temporary file left")

        let link = fixture.path("link.keyring")
        chmod(keyring, 0o600)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: keyring)
        let symlink = try await fixture.sync("keys", "list", "--keyring", link)
        #expect(symlink.status == 78)
        #expect(symlink.stderr == "sync: refusing keyring \(link): it is a symbolic link\n")
    }

    @Test("a missing keyring exits 66, a malformed one 65, a bad command line 64")
    func otherErrors() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let missing = fixture.path("missing.keyring")
        for command in ["list", "add"] {
            let result = try await fixture.sync("keys", command, "--keyring", missing)
            #expect(result.status == 66, "\(command): \(result.stderr)")
            #expect(result.stderr == "sync: no keyring at \(missing)\n")
        }
        #expect(!FileManager.default.fileExists(atPath: missing))

        let noFolder = fixture.path("no/such/folder.keyring")
        let cannot = try await fixture.sync("keys", "new", "--keyring", noFolder)
        #expect(cannot.status == 73)
        #expect(cannot.stderr.hasPrefix("sync: cannot read or write keyring \(noFolder): "))

        let malformed = fixture.path("malformed.keyring")
        #expect(FileManager.default.createFile(atPath: malformed, contents: Data("courier-keyring v1\n0badc0de AAAA primary\n".utf8), attributes: [.posixPermissions: 0o600]))
        let before = try Data(contentsOf: URL(fileURLWithPath: malformed))
        for command in ["list", "add"] {
            let result = try await fixture.sync("keys", command, "--keyring", malformed)
            #expect(result.status == 65, "\(command): \(result.stderr)")
            #expect(result.stderr == "sync: \(malformed), line 2: key 0badc0de has 3 bytes, not 32\n")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: malformed)) == before)

        for arguments in [["keys"], ["keys", "new"], ["keys", "add"], ["keys", "list"]] {
            let result = try await fixture.sync.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        let list = try await fixture.sync("keys", "list")
        #expect(list.stderr.contains("give --keyring FILE, or run under systemd with the credential courier-keyring"))
    }

    @Test("list reads $CREDENTIALS_DIRECTORY/courier-keyring without --keyring; new and add insist on --keyring")
    func credential() async throws {
        var fixture = try Fixture()
        defer { fixture.finish() }
        let credentials = fixture.folder.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: false)
        let keyring = credentials.appendingPathComponent("courier-keyring").path
        fixture.sync.environment["CREDENTIALS_DIRECTORY"] = credentials.path

        let empty = try await fixture.sync("keys", "list")
        #expect(empty.status == 66)
        #expect(empty.stderr == "sync: no keyring credential at \(keyring): the service has no credential of this name\n")
        let bare = try await fixture.sync("keys", "new")
        #expect(bare.status == 64)
        #expect(bare.stderr.contains("sync keys new needs --keyring FILE"))

        #expect(try await fixture.sync("keys", "new", "--keyring", keyring).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: keyring))
        let fromCredential = try await Self.listed(fixture.sync)
        let fromFile = try await Self.listed(fixture.sync, "--keyring", keyring)
        #expect(fromCredential.count == 1)
        #expect(fromCredential.map(\.id) == fromFile.map(\.id))
        #expect(fromCredential.map(\.check) == fromFile.map(\.check))

        for command in ["new", "add"] {
            let refused = try await fixture.sync("keys", command)
            #expect(refused.status == 64, "\(command): \(refused.stderr)")
            #expect(refused.stderr.contains("sync keys \(command) needs --keyring FILE: the keyring at \(keyring) is a systemd credential, which is read-only"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyring)) == before)
    }

    @Test("no key's base64 appears in anything any command prints, successes and failures alike")
    func noKeyMaterial() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let keyring = fixture.path("queue.keyring")
        var printed = [String]()
        func run(_ arguments: String...) async throws {
            let result = try await fixture.sync.run(arguments)
            printed += [result.stdout, result.stderr]
        }
        try await run("keys", "new", "--keyring", keyring)
        try await run("--json", "keys", "new", "--keyring", keyring)
        try await run("keys", "add", "--keyring", keyring)
        try await run("keys", "add", "--keyring", keyring, "--json")
        try await run("keys", "list", "--keyring", keyring)
        try await run("keys", "list", "--keyring", keyring, "--json")
        chmod(keyring, 0o640)
        try await run("keys", "list", "--keyring", keyring)
        try await run("keys", "add", "--keyring", keyring)
        chmod(keyring, 0o600)

        // A keyring whose second key line is broken: its message names the line, not the key.
        let fields = try Self.keyFields(keyring)
        try #require(fields.count == 3)
        let broken = fixture.path("broken.keyring")
        let text = try String(contentsOfFile: keyring, encoding: .utf8).replacingOccurrences(of: " primary", with: " primary extra")
        #expect(FileManager.default.createFile(atPath: broken, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        try await run("keys", "list", "--keyring", broken)
        try await run("keys", "add", "--keyring", broken)

        #expect(printed.count == 20)
        for output in printed {
            for field in fields {
                #expect(!output.contains(field), "a key's base64 was printed: \(output)")
                #expect(!output.contains(field.prefix(16)), "part of a key's base64 was printed")
            }
        }
    }

    @Test("one --keyring per command, before or after its name; new, add and list ignore --sealing and SYNC_SEALING and open no queue")
    func oneKeyringOption() async throws {
        var fixture = try Fixture()
        defer { fixture.finish() }
        let keyring = fixture.path("queue.keyring")
        fixture.sync.environment["SYNC_SEALING"] = "required"
        let made = try await fixture.sync("--keyring", keyring, "keys", "new", "--sealing", "required")
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try await fixture.sync("keys", "add", "--keyring", keyring).status == 0)
        let before = try await Self.listed(fixture.sync, "--keyring", keyring)
        let after = try await fixture.sync("--json", "--keyring", keyring, "keys", "list")
        #expect(after.status == 0, "\(after.stderr)")
        #expect((try after.json() as? [[String: Any]])?.compactMap { $0["id"] as? String } == before.map(\.id))
        #expect(try await fixture.sync("keys", "list", "--keyring", keyring, "--keyring", keyring).status == 0, "the last one counts, as for any option")

        for command in ["new", "add", "list", "status", "rotate", "encrypt"] {
            let help = try await fixture.sync("keys", command, "--help")
            #expect(help.status == 0)
            let lines = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            let usage = try #require(lines.first { $0.hasPrefix("USAGE:") })
            #expect(usage.components(separatedBy: "--keyring").count == 2, "\(command): one --keyring in \(usage)")
            #expect(lines.filter { $0.hasPrefix("--keyring <file>") }.count == 1, "\(command): one --keyring in\n\(help.stdout)")
            let queueOptions = ["--db", "--sealing"].filter { help.stdout.contains($0) }
            #expect(queueOptions == (["new", "add", "list"].contains(command) ? [] : ["--db", "--sealing"]), "\(command)")
        }
    }

    @Test("status, rotate and encrypt: 64 for a bad command line or rotate and encrypt without a keyring, 66 without a database")
    func queueCommandLines() async throws {
        let fixture = try Fixture()
        defer { fixture.finish() }
        let keyring = fixture.path("queue.keyring")
        #expect(try await fixture.sync("keys", "new", "--keyring", keyring).status == 0)
        for command in ["rotate", "encrypt"] {
            let bare = try await fixture.sync("keys", command)
            #expect(bare.status == 64, "\(command): \(bare.stderr)")
            #expect(bare.stderr.contains("sync keys \(command) needs a keyring: give --keyring FILE, or run under systemd with the credential courier-keyring"))
            for batch in ["0", "10001", "many"] {
                #expect(try await fixture.sync("keys", command, "--keyring", keyring, "--batch", batch).status == 64, "\(command) --batch \(batch)")
            }
            let missing = try await fixture.sync("keys", command, "--keyring", keyring)
            #expect(missing.status == 66, "\(command): \(missing.stderr)")
        }
        let status = try await fixture.sync("keys", "status", "--keyring", keyring)
        #expect(status.status == 66)
        #expect(status.stderr.hasPrefix("sync: "))
        #expect(try await fixture.sync("keys", "status", "--sealing", "sometimes").status == 64)
    }
}
