import Foundation
import GRDB
import Testing
import TestSupport

/// The Debian package as an operator gets it: built by Tools/package (from this run's debug
/// build, so the suite needs no release build), lintian clean, then installed with `dpkg --root`
/// into a throwaway root (maintainer scripts run chrootless, honouring DPKG_ROOT), its keyring
/// made, upgraded over a queue with pending entries of an older schema (the keyring untouched),
/// removed and purged (the keyring kept).
@Suite("The Debian package: built, installed into a throwaway root, upgraded, removed and purged")
struct SyncPackageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `executable arguments…` with `environment` added, and expects it to exit 0.
    @discardableResult
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], limit: Duration = .seconds(300),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let settings = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let result = try await runTool("/usr/bin/env", settings + [executable] + arguments, limit: limit)
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "\(executable) \(arguments.joined(separator: " ")) exited \(result.status): \(result.errorText)", sourceLocation: sourceLocation)
        return output
    }

    /// `dpkg` on the throwaway root `target`: scripts without chroot (they honour DPKG_ROOT), and
    /// the root's empty status database not holding the libraries the package depends on.
    static func dpkg(_ target: URL, _ arguments: String...) async throws {
        try await run("/usr/bin/dpkg", ["--root=\(target.path)", "--force-script-chrootless", "--force-depends", "--log=/dev/null"] + arguments)
    }

    @Test("Tools/package builds a lintian-clean .deb; installed, it makes its keyring, and its binary, man pages, completions and units work; an upgrade migrates the queue and keeps the keyring; remove keeps the queue, purge deletes it and keeps the keyring")
    func installUpgradeRemovePurge() async throws {
        try #require(getuid() == 0, "installing into a root with its own system user needs root (Tools/test runs as root)")
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/lintian"), "Tools/test installs lintian")
        let folder = try makeTemporaryFolder("package")
        defer { try? FileManager.default.removeItem(at: folder) }
        let sync = try builtProduct(named: "sync"), manual = try builtProduct(named: "generate-manual")
        var debs: [String] = []
        // lintian checks the first (Tools/package fails on an error or warning it does not explain).
        for revision in ["1", "2"] {
            let printed = try await Self.run(Self.root.appendingPathComponent("Tools/package").path, [
                "--binary", sync.path, "--manual", manual.path, "--revision", revision, "--output", folder.appendingPathComponent("debs").path, "--fast",
            ] + (revision == "1" ? [] : ["--no-lintian"]))
            debs.append(try #require(printed.split(separator: "\n").last.map(String.init)))
        }
        let version = try await Self.run(sync.path, ["--version"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(debs.first?.hasSuffix("/courier-sync_\(version)-1_amd64.deb") ?? false, "\(debs)")
        let control = try await Self.run("/usr/bin/dpkg-deb", ["--field", debs[0], "Version", "Depends"])
        #expect(control.contains("Version: \(version)-1") && control.contains("libsqlite3-0") && control.contains("systemd"), "\(control)")

        // A throwaway root with an empty dpkg database.
        let target = folder.appendingPathComponent("root")
        for directory in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "etc"] {
            try FileManager.default.createDirectory(at: target.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        for file in ["var/lib/dpkg/status", "var/lib/dpkg/available"] {
            try Data().write(to: target.appendingPathComponent(file))
        }
        try await Self.dpkg(target, "--install", debs[0])
        let tool = target.appendingPathComponent("usr/bin/courier-sync").path
        #expect(try await Self.run(tool, ["--version"]) == version + "\n")
        #expect(try await Self.run(tool, ["--help"]).contains("USAGE: courier-sync"), "the help names the command as installed")

        // The system user, and its state directory, 0700.
        let passwd = try String(contentsOf: target.appendingPathComponent("etc/passwd"), encoding: .utf8)
        let user = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("courier-sync:") }, "\(passwd)")
        let uid = try #require(Int(user.split(separator: ":")[2]))
        let state = target.appendingPathComponent("var/lib/courier-sync")
        let attributes = try FileManager.default.attributesOfItem(atPath: state.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o700 && (attributes[.ownerAccountID] as? Int) == uid)

        // The keyring the units load (LoadCredential=), made by postinst since systemd fails a
        // start without it: root's, 0600, a regular file, loadable. (Here postinst ran the root's
        // binary on this host, DPKG_ROOT set.)
        let keyring = target.appendingPathComponent("etc/courier/courier-sync.keyring").path
        let keyringAttributes = try FileManager.default.attributesOfItem(atPath: keyring)
        #expect((keyringAttributes[.type] as? FileAttributeType) == .typeRegular)
        #expect((keyringAttributes[.posixPermissions] as? Int) == 0o600 && (keyringAttributes[.ownerAccountID] as? Int) == 0
            && (keyringAttributes[.groupOwnerAccountID] as? Int) == 0, "\(keyringAttributes)")
        let keys = try await Self.run(tool, ["keys", "list", "--keyring", keyring])
        #expect(keys.split(separator: "\n").count == 1 && keys.contains("primary"), "\(keys)")
        let keyringBytes = try Data(contentsOf: URL(fileURLWithPath: keyring))

        // Man pages, read as man reads them.
        let pages = target.appendingPathComponent("usr/share/man/man1")
        let names = try FileManager.default.contentsOfDirectory(atPath: pages.path).sorted()
        #expect(names.contains("courier-sync.1.gz") && names.contains("courier-sync.run.1.gz") && names.contains("courier-sync.keys.rotate.1.gz"), "\(names)")
        let runPage = try await Self.run("/usr/bin/man", ["-l", pages.appendingPathComponent("courier-sync.run.1.gz").path], environment: ["MANPAGER": "cat", "MANWIDTH": "100"])
        #expect(runPage.contains("courier-sync run") && runPage.contains("--origin-limit-file"), "\(runPage.prefix(600))")
        let whatis = try await Self.run("/usr/bin/lexgrog", [pages.appendingPathComponent("courier-sync.drain.1.gz").path])
        #expect(whatis.contains("courier-sync.drain - Send what is due"), "\(whatis)")

        // bash completion, sourced as bash-completion does, completing `courier-sync dr`.
        let completion = target.appendingPathComponent("usr/share/bash-completion/completions/courier-sync").path
        let completed = try await Self.run("/bin/bash", ["-c", """
            source "$1"
            COMP_WORDS=(courier-sync dr); COMP_CWORD=1; COMP_LINE="courier-sync dr"; COMP_POINT=${#COMP_LINE}
            _courier-sync courier-sync dr courier-sync
            printf '%s\\n' "${COMPREPLY[@]}"
            """, "bash", completion])
        #expect(completed.split(separator: "\n").contains("drain"), "\(completed)")

        // The units, verified against the root (with systemd's own units beside them), and their exposure.
        try await Self.run("/bin/cp", ["-an", "/usr/lib/systemd/system/.", target.appendingPathComponent("usr/lib/systemd/system").path])
        try await Self.run("/usr/bin/systemd-analyze", ["verify", "--man=no", "--root=\(target.path)", "courier-sync.service", "courier-sync@orders.service"])
        for unit in ["courier-sync.service", "courier-sync@orders.service"] {
            let security = try await Self.run("/usr/bin/systemd-analyze", ["security", "--offline=true", "--root=\(target.path)", "--threshold=49", unit])
            let overall = try #require(security.split(separator: "\n").last { $0.contains("Overall exposure level") }.map(String.init))
            // "…: 1.6 OK 🙂" (":-)" in place of the emoji outside a UTF-8 locale).
            let level = overall.components(separatedBy: "\(unit): ").last?.split(separator: " ").dropFirst().first
            #expect(level == "OK" || level == "SAFE", "\(unit): \(overall)")
        }

        // A queue with pending entries, of the schema the previous release wrote (15: no activity table).
        let database = state.appendingPathComponent("queue.db").path
        for n in 1...3 { try await Self.run(tool, ["enqueue", "POST", "http://127.0.0.1:9/n/\(n)"], environment: ["SYNC_DB": database]) }
        try await DatabaseQueue(path: database).write { db in
            for column in ["open_after", "failures", "last_failure", "open_until", "open_until_wall", "probe_wait", "opened_at"] {
                try db.execute(sql: "ALTER TABLE origin_flow DROP COLUMN \(column)")
            }
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v18-origin-health'; DROP INDEX entry_finished; DELETE FROM grdb_migrations WHERE identifier = 'v17-retention'; DROP TABLE activity_minute; DELETE FROM grdb_migrations WHERE identifier = 'v16-activity'; PRAGMA user_version = 15")
        }
        try await Self.dpkg(target, "--install", debs[1])
        let upgraded = try await Self.run("/usr/bin/dpkg-query", ["--admindir=\(target.path)/var/lib/dpkg", "-W", "-f", "${Version}", "courier-sync"])
        #expect(upgraded == "\(version)-2")
        // The upgrade's configure leaves the keyring as it was: same bytes, same owner and mode.
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyring)) == keyringBytes, "an upgrade must never make the keyring again")
        let upgradedAttributes = try FileManager.default.attributesOfItem(atPath: keyring)
        #expect((upgradedAttributes[.posixPermissions] as? Int) == 0o600 && (upgradedAttributes[.ownerAccountID] as? Int) == 0)
        // Nor does it touch one that is unusual: a symbolic link, a file others may read. It says
        // so on standard error and leaves it as it is (postinst configure, run again as dpkg runs it).
        let postinst = target.appendingPathComponent("var/lib/dpkg/info/courier-sync.postinst").path
        let configure = { () async throws -> ToolResult in
            try await runTool("/usr/bin/env", ["DPKG_ROOT=\(target.path)", postinst, "configure", "\(version)-1"], limit: .seconds(120))
        }
        let aside = keyring + ".real"
        try FileManager.default.moveItem(atPath: keyring, toPath: aside)
        try FileManager.default.createSymbolicLink(atPath: keyring, withDestinationPath: "courier-sync.keyring.real")
        let linked = try await configure()
        #expect(linked.status == 0 && linked.errorText.contains("is a symbolic link; left as it is"), "\(linked.status): \(linked.errorText)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: keyring) == "courier-sync.keyring.real")
        try FileManager.default.removeItem(atPath: keyring)
        try FileManager.default.moveItem(atPath: aside, toPath: keyring)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyring)
        let readable = try await configure()
        #expect(readable.status == 0 && readable.errorText.contains("is not root's alone"), "\(readable.status): \(readable.errorText)")
        #expect((try FileManager.default.attributesOfItem(atPath: keyring)[.posixPermissions] as? Int) == 0o644)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyring)
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyring)) == keyringBytes)
        // The first command that writes migrates it; nothing is lost.
        try await Self.run(tool, ["pause"], environment: ["SYNC_DB": database])
        try await Self.run(tool, ["resume"], environment: ["SYNC_DB": database])
        let stats = try await Self.run(tool, ["--json", "stats"], environment: ["SYNC_DB": database])
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any])
        #expect(counts["pending"] as? Int == 3, "\(stats)")
        #expect(try await DatabaseQueue(path: database).read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 18)

        // remove keeps the queue and the settings; purge deletes both.
        try await Self.dpkg(target, "--remove", "courier-sync")
        #expect(!FileManager.default.fileExists(atPath: tool) && FileManager.default.fileExists(atPath: database))
        #expect(FileManager.default.fileExists(atPath: target.appendingPathComponent("etc/courier/courier-sync.conf").path))
        try await Self.dpkg(target, "--purge", "courier-sync")
        #expect(!FileManager.default.fileExists(atPath: state.path))
        #expect(!FileManager.default.fileExists(atPath: target.appendingPathComponent("etc/courier/courier-sync.conf").path))
        // …but not the keyring: what it sealed may outlive the state directory (Tools/packaging/postrm).
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyring)) == keyringBytes, "purge keeps the keyring")
    }
}
