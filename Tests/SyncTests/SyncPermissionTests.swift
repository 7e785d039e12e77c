import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync` run by a user who may read the queue but not write it: the read-only commands work,
/// the others fail cleanly, and neither leaves a byte or a file behind.
///
/// The tests run as root, which no file mode stops, so the reader is `nobody`, by `setpriv`.
@Suite("sync: a user without write permission", .serialized, .enabled(if: geteuid() == 0, "needs root to become nobody"))
struct SyncPermissionTests {
    /// `nobody`, with no supplementary group that could grant access.
    static let asNobody = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]

    /// What a writer keeps beside the file between commands: its disk reserve (the wake file
    /// comes with the first drainer); never a `-wal` or `-shm`.
    static let kept = ["queue.db", "queue.db.reserve"]

    func listing(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    @Test("list, show and stats work as nobody on root's 0644 file in a 0755 folder; writes exit 73 or 74 and change nothing")
    func readOnlyCommands() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sync-perm-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        chmod(folder.path, 0o755)
        let database = folder.appendingPathComponent("queue.db").path
        let owner = SyncRunner(database: database)
        #expect(try await owner("enqueue", "POST", "http://127.0.0.1:9/events", "--data", "{\"n\":1}").status == 0)
        #expect(listing(folder) == Self.kept, "the owner's enqueue left no -wal or -shm behind")
        // Every command that writes closes the file before it exits, whatever it did.
        for arguments in [["pause"], ["resume"], ["retry", "1"], ["purge", "--delivered"]] {
            let result = try await owner.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(listing(folder) == Self.kept, "\(arguments) left no -wal or -shm behind")
        }
        chmod(database, 0o644)
        let files = listing(folder)
        let bytes = FileManager.default.contents(atPath: database)

        var nobody = SyncRunner(database: database)
        nobody.launcher = Self.asNobody
        let stats = try await nobody("--json", "stats")
        #expect(stats.status == 0, "\(stats.stderr)")
        let counts = try #require(try stats.json() as? [String: Any])
        #expect(counts["pending"] as? Int == 1)
        let list = try await nobody("--json", "list")
        #expect(list.status == 0, "\(list.stderr)")
        #expect((try list.json() as? [Any])?.count == 1)
        let show = try await nobody("show", "1")
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("http://127.0.0.1:9/events"))

        for arguments in [["enqueue", "POST", "http://127.0.0.1:9/more"], ["retry", "1"], ["purge", "1"]] {
            let refused = try await nobody.run(arguments)
            #expect([73, 74].contains(refused.status), "\(arguments): \(refused.status) \(refused.stderr)")
            #expect(refused.stderr.hasPrefix("sync: "))
        }

        #expect(listing(folder) == files, "nothing created beside the file")
        #expect(FileManager.default.contents(atPath: database) == bytes, "not a byte changed")
        let after = try await owner("--json", "stats")
        #expect((try after.json() as? [String: Any])?["pending"] as? Int == 1)
    }
}
