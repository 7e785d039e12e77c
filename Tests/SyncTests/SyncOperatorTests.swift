import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The operator's commands, through the built binary: bulk retry and purge, pause and resume,
/// and the list's formats.
@Suite("sync: bulk selections, pause and resume, list formats")
struct SyncOperatorTests {
    typealias Fixture = SyncCommandTests.Fixture

    /// Dead: 1 (404, group a), 2 (410, group a), 3 (404, group b); delivered: 4.
    func populate(_ fixture: Fixture) async throws {
        let sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/status/404?n=1"), "--group", "a").status == 0)
        #expect(try await sync("enqueue", "POST", fixture.url("/status/410?n=2"), "--group", "a").status == 0)
        #expect(try await sync("enqueue", "POST", fixture.url("/status/404?n=3"), "--group", "b").status == 0)
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=4")).status == 0)
        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        #expect(drained.stdout.contains("delivered 1") && drained.stdout.contains("dead 3"), "\(drained.stdout)")
    }

    func states(_ sync: SyncRunner) async throws -> [Int: String] {
        let listed = try #require(try await sync("--json", "list").json() as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: listed.map { ($0["id"] as? Int ?? 0, $0["state"] as? String ?? "") })
    }

    @Test("retry and purge a selection: --status, --group, --state, --url-prefix, --older-than, --dry-run")
    func bulk() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        try await populate(fixture)

        let preview = try #require(try await sync("--json", "retry", "--status", "404", "--dry-run").json() as? [String: Any])
        #expect(preview["retried"] as? [Int] == [1, 3])
        #expect(preview["dry_run"] as? Bool == true)
        #expect(preview["skipped"] as? [Int] == [])
        #expect((preview["entries"] as? [[String: Any]])?.map { $0["state"] as? String } == ["dead", "dead"])
        #expect(try await states(sync) == [1: "dead", 2: "dead", 3: "dead", 4: "delivered"], "a dry run changes nothing")
        let previewText = try await sync("retry", "--status", "404", "--dry-run")
        #expect(previewText.stdout.hasPrefix("would retry 2 entries:\n1  dead  POST  "), "\(previewText.stdout)")
        #expect(previewText.stdout.split(separator: "\n").count == 3)

        let retried = try await sync("retry", "--group", "a", "--status", "4xx")
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(retried.stdout == "2 entries due now\n")
        #expect(try await states(sync) == [1: "pending", 2: "pending", 3: "dead", 4: "delivered"])

        let byPrefix = try #require(try await sync("--json", "retry", "--state", "dead", "--url-prefix", fixture.url("/status/404")).json() as? [String: Any])
        #expect(byPrefix["retried"] as? [Int] == [3])

        let purgePreview = try await sync("purge", "--state", "pending", "--group", "a", "--dry-run")
        #expect(purgePreview.stdout.hasPrefix("would purge 2 entries:\n"), "\(purgePreview.stdout)")
        let purged = try #require(try await sync("--json", "purge", "--state", "pending", "--group", "a").json() as? [String: Any])
        #expect(purged["purged"] as? Int == 2)
        #expect(purged["ids"] as? [Int] == [1, 2])
        #expect(purged["dry_run"] as? Bool == false)
        let old = try await sync("purge", "--older-than", "1d")
        #expect(old.stdout == "0 entries purged\n", "nothing is a day old")
        let rest = try await sync("purge", "--older-than", "0s")
        #expect(rest.stdout == "2 entries purged\n")
        #expect(try await states(sync).isEmpty)
        await fixture.finish()
    }

    @Test("bad selections exit 64 with the reason")
    func badSelections() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        try await populate(fixture)
        let cases: [([String], String)] = [
            (["retry", "--status", "99x"], "--status"),
            (["retry", "--status", "600"], "--status"),
            (["retry", "1", "--group", "a"], "not both"),
            (["retry", "1", "--dry-run"], "--dry-run"),
            (["retry", "--state", "delivered"], "pending, dead or conflict"),
            (["retry", "--dry-run"], "give entry ids, --dead, or a selection"),
            (["purge"], "give --delivered, --dead, a selection"),
            (["purge", "--older-than", "inf"], "--older-than"),
            (["purge", "--older-than", "1000000w"], "--older-than"),
            (["purge", "--state", "gone"], "--state"),
        ]
        for (arguments, reason) in cases {
            let result = try await sync.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(reason), "\(arguments): \(result.stderr)")
        }
        #expect(try await states(sync).count == 4, "nothing changed")
        await fixture.finish()
    }

    @Test("pause and resume: no drainer of another process claims, stats and list show it, sync run resumes")
    func pauseAndResume() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=1"), "--group", "g").status == 0)
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?n=2")).status == 0)
        #expect(try await sync("pause", "--group", "g").stdout == "group g paused\n")
        let paused = try await sync("pause")
        #expect(paused.status == 0 && paused.stdout == "the queue paused\n")
        let again = try #require(try await sync("--json", "pause").json() as? [String: Any])
        #expect(again["changed"] as? Bool == false && again["paused"] as? Bool == true && again["group"] is NSNull)

        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(stats["paused"] as? Bool == true)
        #expect(stats["paused_groups"] as? [String] == ["g"])
        #expect(stats["pending_paused"] as? Int == 2)
        #expect(stats["next_attempt_at"] is NSNull, "nothing a pause holds is due")
        let statsText = try await sync("stats")
        #expect(statsText.stdout.contains("PAUSED") && statsText.stdout.contains("paused groups  g"), "\(statsText.stdout)")
        #expect(statsText.stdout.contains("pending    2 (2 held by a pause)"))
        let listed = try await sync("list")
        #expect(listed.stdout.split(separator: "\n").allSatisfy { $0.contains("next=paused") }, "\(listed.stdout)")
        let listedJSON = try #require(try await sync("--json", "list").json() as? [[String: Any]])
        #expect(listedJSON.allSatisfy { $0["paused"] as? Bool == true })

        let held = try await sync("drain", "--no-reachability")
        #expect(held.status == 75, "entries remain")
        #expect(held.stdout.contains("2 entries are held by a pause"), "\(held.stdout)")
        #expect(fixture.server.requests.isEmpty, "no drainer claims a paused entry")

        #expect(try await sync("resume").stdout == "the queue resumed\n")
        #expect(try await sync("resume").stdout == "the queue was already not paused\n")
        let partly = try #require(try await sync("--json", "drain", "--no-reachability").json() as? [String: Any])
        #expect(partly["delivered"] as? Int == 1 && partly["paused"] as? Int == 1)
        #expect(fixture.server.requests.map { $0.queryValue("n") } == ["2"])

        // A running service picks the group up once another process resumes it.
        let (process, _, errors) = try sync.start(["run", "--no-reachability", "--poll", "0.2"])
        let log = readToEnd(errors.fileHandleForReading)
        let resumed = try await sync("--json", "resume", "--group", "g")
        #expect(try #require(try resumed.json() as? [String: Any])["changed"] as? Bool == true)
        #expect(await eventually { fixture.server.requests.count == 2 })
        process.signal(SIGTERM)
        try await SyncRunner.wait(for: process, limit: .hangGuard)
        _ = await log.value
        #expect(process.terminationStatus == 0)
        let final = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(final["delivered"] as? Int == 2 && final["paused"] as? Bool == false && final["paused_groups"] as? [String] == [])
        #expect(try await SyncRunner(database: fixture.folder.appendingPathComponent("missing.db").path)("pause").status == 66)
        await fixture.finish()
    }

    @Test("an origin a 429 paused: sync stats shows it with its status and limit, sync resume --origin lifts it; bad limits exit 64")
    func originFlow() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        fixture.server.route("/busy") { _, writer in
            try await writer.respond(status: 429, headers: [HeaderField(name: "Retry-After", value: "600")])
        }
        let origin = fixture.server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        for n in 1...3 { #expect(try await sync("enqueue", "POST", fixture.url("/busy?n=\(n)")).status == 0) }
        // Limits from a file: comments and blank lines; an option wins over the file for its origin.
        let limits = fixture.folder.appendingPathComponent("limits.conf")
        try "# the test server\n\n\(origin)=1/s  # replaced below\nhttps://*.example.com=2/s\n".write(to: limits, atomically: true, encoding: .utf8)
        let drained = try await sync(
            "drain", "--no-reachability", "--concurrency", "1", "--origin-limit-file", limits.path, "--origin-limit", "\(origin)=5/s,burst=2"
        )
        #expect(drained.status == 75, "entries remain: \(drained.stderr)")
        #expect(fixture.server.requests.count == 1, "one 429, then the origin waits: \(fixture.server.requests.count) requests")

        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        let origins = try #require(stats["origins"] as? [[String: Any]])
        #expect(origins.count == 2 && origins.last?["origin"] as? String == "https://*.example.com" && origins.last?["limit"] as? String == "https://*.example.com=2/s")
        #expect(origins.first?["origin"] as? String == origin)
        #expect(origins.first?["pause_status"] as? Int == 429 && origins.first?["paused_until"] is String)
        #expect(origins.first?["limit"] as? String == "\(origin)=5/s,burst=2" && origins.first?["inflight"] as? Int == 0)
        #expect(stats["due"] as? Int == 0 && stats["due_held_by_flow"] as? Int == 2, "the paused origin's other entries are held, not due")
        let text = try await sync("stats")
        #expect(text.stdout.contains("origin     \(origin): paused until ") && text.stdout.contains("after a 429, limit 5/s,burst=2, 0 in flight"), "\(text.stdout)")

        #expect(try await sync("resume", "--origin", origin).stdout == "origin \(origin) resumed\n")
        let again = try #require(try await sync("--json", "resume", "--origin", origin).json() as? [String: Any])
        #expect(again["changed"] as? Bool == false)
        #expect(try await sync("resume", "--origin", origin, "--group", "g").status == 64)
        for bad in ["\(origin)", "\(origin)/path=1/s", "\(origin)=0/s", "\(origin)=fast"] {
            let refused = try await sync("drain", "--no-reachability", "--origin-limit", bad)
            #expect(refused.status == 64 && refused.stderr.contains("--origin-limit"), "\(bad): \(refused.stderr)")
        }
        try "\(origin)=5/s\n\(origin)=fast\n".write(to: limits, atomically: true, encoding: .utf8)
        let badFile = try await sync("drain", "--no-reachability", "--origin-limit-file", limits.path)
        #expect(badFile.status == 64 && badFile.stderr.contains("line 2"), "\(badFile.stderr)")
        await fixture.finish()
    }

    @Test("list --format table|json|csv: CSV is RFC 4180, quoted where needed and safe for spreadsheets")
    func listFormats() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/echo?a=1,b=2"), "--group", "say \"hi\", then\nleave").status == 0)
        #expect(try await sync("enqueue", "PUT", fixture.url("/echo"), "--group", "=HYPERLINK(\"x\")").status == 0)
        #expect(try await sync("enqueue", "DELETE", fixture.url("/echo")).status == 0)

        let csv = try await sync("list", "--format", "csv")
        #expect(csv.status == 0, "\(csv.stderr)")
        let records = csv.stdout.components(separatedBy: "\r\n")
        #expect(records.last == "", "every record ends with CRLF")
        #expect(records.first == "id,state,method,url,group,priority,attempts,next_attempt_at,last_status,created_at,finished_at,dead_reason,lease_owner,paused")
        #expect(records.count == 5)
        #expect(records[1].hasPrefix("1,pending,POST,\"\(fixture.url("/echo?a=1,b=2"))\",\"say \"\"hi\"\", then\nleave\",0,0,"), "\(records[1])")
        #expect(records[2].contains(",\"'=HYPERLINK(\"\"x\"\")\","), "a formula is defused: \(records[2])")
        #expect(records[3].hasPrefix("3,pending,DELETE,\(fixture.url("/echo")),,0,0,"), "\(records[3])")
        #expect(records[3].hasSuffix(",false"))

        let json = try await sync("list", "--format", "json")
        let viaFlag = try await sync("--json", "list")
        #expect(json.stdout == viaFlag.stdout)
        #expect((try json.json() as? [[String: Any]])?.count == 3)
        let table = try await sync("list", "--format", "table")
        // The same lines as without --format, but for relative times that moved meanwhile.
        let plain = try await sync("list")
        let leading = { (text: String) in text.split(separator: "\n").map { $0.split(separator: "  ").prefix(5) } }
        #expect(leading(table.stdout) == leading(plain.stdout))
        #expect(table.stdout.split(separator: "\n").count == 3)

        let conflict = try await sync("--json", "list", "--format", "csv")
        #expect(conflict.status == 64 && conflict.stderr.contains("disagree"), "\(conflict.stderr)")
        #expect(try await sync("list", "--format", "xml").status == 64)
        await fixture.finish()
    }
}
