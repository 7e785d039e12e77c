import Foundation
import GRDB
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The `sync` binary, run as a user would, against a loopback server.
@Suite("sync: commands, output and exit codes")
struct SyncCommandTests {
    struct Fixture {
        let folder: URL
        let server: TestHTTPServer
        var sync: SyncRunner

        /// A queue in a file, or (with `postgres`) in a schema of its own in the test cluster.
        init(postgres: Bool = false) async throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("sync-test-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            server = try await TestHTTPServer.start()
            sync = SyncRunner(database: postgres ? try Self.postgresSchema() : folder.appendingPathComponent("queue.db").path)
        }

        /// The test cluster's URL with a fresh schema (`Tools/test` sets the cluster up).
        static func postgresSchema() throws -> String {
            guard let url = ProcessInfo.processInfo.environment["COURIER_TEST_POSTGRES_URL"], !url.isEmpty else {
                throw TestServerError("COURIER_TEST_POSTGRES_URL is not set: run Tools/test, which starts a throwaway PostgreSQL cluster")
            }
            return url + (url.contains("?") ? "&" : "?") + "schema=s_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        }

        func url(_ path: String) -> String { server.url(path).absoluteString }

        /// A route answering `status` the first time, then 200.
        func failOnce(_ path: String, status: Int) {
            let calls = LockedBox(0)
            server.route(path) { _, writer in
                let call = calls.withLock { count -> Int in
                    count += 1
                    return count
                }
                try await writer.respond(status: call == 1 ? status : 200)
            }
        }

        func finish() async {
            await server.shutdown()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test("enqueue, drain, list, show (secrets redacted) and stats: the same output and keys on a file and on PostgreSQL", arguments: [false, true])
    func roundTrip(postgres: Bool) async throws {
        let fixture = try await Fixture(postgres: postgres)
        let sync = fixture.sync
        let first = try await sync("enqueue", "POST", fixture.url("/echo?n=1"), "-H", "Content-Type: application/json", "--data", "{\"n\":1}")
        #expect(first.status == 0)
        #expect(first.stdout == "1\n")
        let second = try await sync("--json", "enqueue", "PUT", fixture.url("/echo?token=s3cr3t"), "-H", "Authorization: Bearer abc123", "--store-secrets", "--group", "g")
        #expect(second.status == 0)
        let ticket = try #require(try second.json() as? [String: Any])
        #expect(ticket["id"] as? Int == 2)
        #expect((ticket["idempotency_key"] as? String)?.isEmpty == false)

        let stats = try await sync("--json", "stats")
        let counts = try #require(try stats.json() as? [String: Any])
        #expect(Set(counts.keys) == [
            "pending", "due", "inflight", "inflight_orphaned", "delivered", "dead", "blocked", "superseded", "conflict", "oldest_pending_age_seconds", "next_attempt_at",
            "last_delivered_at", "paused", "paused_groups", "pending_paused", "origins", "due_held_by_flow", "stuck",
        ])
        #expect(counts["pending"] as? Int == 2)
        #expect(counts["next_attempt_at"] is String)

        let shown = try await sync("show", "2")
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("Authorization: <redacted>"))
        #expect(!shown.stdout.contains("abc123"))
        #expect(!shown.stdout.contains("s3cr3t"), "secret query values are redacted too")
        let revealed = try await sync("--json", "show", "2", "--reveal-secrets")
        let object = try #require(try revealed.json() as? [String: Any])
        let headers = try #require(object["headers"] as? [[String: String]])
        #expect(headers.contains(["name": "Authorization", "value": "Bearer abc123"]))

        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 0, "\(drained.stderr)")
        #expect(drained.stdout.contains("delivered 2"))
        #expect(fixture.server.requests.count == 2)
        let withSecret = fixture.server.requests.first { $0.queryValue("token") != nil }
        #expect(withSecret?.values(of: "Authorization") == ["Bearer abc123"], "the stored secret is sent")

        let listed = try await sync("list")
        #expect(listed.stdout.split(separator: "\n").count == 2)
        #expect(listed.stdout.contains("delivered"))
        let listedJSON = try #require(try await sync("--json", "list", "--state", "delivered").json() as? [[String: Any]])
        #expect(listedJSON.map { $0["id"] as? Int } == [1, 2])
        let empty = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(empty["pending"] as? Int == 0)
        #expect(empty["delivered"] as? Int == 2)
        #expect(empty["next_attempt_at"] is NSNull)
        #expect(empty["oldest_pending_age_seconds"] is NSNull)
        await fixture.finish()
    }

    @Test("a secret header is refused (65) with both ways out named; a template is stored and resolved at send time")
    func secrets() async throws {
        let fixture = try await Fixture()
        var sync = fixture.sync
        let refused = try await sync("enqueue", "POST", fixture.url("/echo"), "-H", "Authorization: Bearer raw-token")
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("Authorization"))
        #expect(refused.stderr.contains("--store-secrets"))
        #expect(refused.stderr.contains("${env:"))
        #expect(refused.stderr.contains("${credential:"))
        #expect(refused.stderr.split(separator: "\n").count == 1, "one line")
        let stored = try await sync("enqueue", "POST", fixture.url("/echo"), "-H", "Authorization: Bearer ${env:API_TOKEN}")
        #expect(stored.status == 0)
        sync.environment["API_TOKEN"] = "from-the-environment"
        // The same server named `localhost` is another origin: the template is not allowed there.
        let elsewhere = try await sync("enqueue", "POST", fixture.server.url("/elsewhere", host: "localhost").absoluteString, "-H", "Authorization: Bearer ${env:API_TOKEN}")
        #expect(elsewhere.status == 0)
        let drained = try await sync("drain", "--no-reachability", "--allow-secret", "API_TOKEN=\(fixture.server.baseURL.absoluteString)")
        #expect(drained.status == 0, "\(drained.stdout)\(drained.stderr)")
        #expect(drained.stdout.contains("dead 1"), "\(drained.stdout)")
        #expect(fixture.server.requests.first { $0.path == "/echo" && $0.values(of: "Authorization") == ["Bearer from-the-environment"] } != nil)
        #expect(!fixture.server.requests.contains { $0.path == "/elsewhere" }, "nothing was sent to the origin the secret is not allowed for")
        let deadID = elsewhere.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let dead = try #require(try await sync("--json", "show", deadID).json() as? [String: Any])
        #expect((dead["last_error"] as? String)?.contains("not allowed for http://localhost:\(fixture.server.port)") == true, "\(dead)")
        // Clear-text http off loopback is refused at once.
        let cleartext = try await sync("drain", "--no-reachability", "--allow-secret", "API_TOKEN=http://api.example.com")
        #expect(cleartext.status == 64)
        let file = try Data(contentsOf: URL(fileURLWithPath: sync.database))
        #expect(!String(decoding: file, as: UTF8.self).contains("raw-token"))
        await fixture.finish()
    }

    @Test("retry and purge, on a file and on PostgreSQL", arguments: [false, true])
    func retryAndPurge(postgres: Bool) async throws {
        let fixture = try await Fixture(postgres: postgres)
        let sync = fixture.sync
        fixture.failOnce("/later", status: 404)
        #expect(try await sync("enqueue", "POST", fixture.url("/later")).status == 0)
        #expect(try await sync("drain", "--no-reachability").status == 0, "a dead entry is not pending")
        let dead = try #require(try await sync("--json", "list", "--state", "dead").json() as? [[String: Any]])
        #expect(dead.count == 1)
        #expect(dead.first?["last_status"] as? Int == 404)
        #expect(try await sync("retry", "--dead").stdout == "1 entries due now\n")
        #expect(try await sync("drain", "--no-reachability").status == 0)
        #expect(try await sync("purge", "--delivered", "--older-than", "1h").stdout == "0 entries purged\n")
        #expect(try await sync("purge", "--delivered").stdout == "1 entries purged\n")
        #expect(try await sync("retry", "99").status == 65)
        #expect(try await sync("purge", "99").status == 65)
        await fixture.finish()
    }

    @Test("enqueue --after: blocked until its parent is delivered, shown both ways; a missing parent is refused (65) with nothing stored", arguments: [false, true])
    func after(postgres: Bool) async throws {
        let fixture = try await Fixture(postgres: postgres)
        let sync = fixture.sync
        let arrivals = LockedBox([String]())
        fixture.server.route("/steps") { request, writer in
            arrivals.withLock { $0.append(request.queryValue("n") ?? "?") }
            try await writer.respond(status: 201)
        }
        #expect(try await sync("enqueue", "POST", fixture.url("/steps?n=create")).stdout == "1\n")
        let child = try await sync("enqueue", "POST", fixture.url("/steps?n=tag"), "--priority", "9", "--after", "1", "--when-parent-dies", "wait")
        #expect(child.status == 0 && child.stdout == "2\n")
        let blocked = try #require(try await sync("--json", "list", "--state", "blocked").json() as? [[String: Any]])
        #expect(blocked.map { $0["id"] as? Int } == [2])
        let shown = try #require(try await sync("--json", "show", "2").json() as? [String: Any])
        #expect(shown["state"] as? String == "blocked" && shown["after"] as? [Int] == [1] && shown["when_parent_dies"] as? String == "wait")
        #expect(try await sync("show", "1").stdout.contains("waited_for_by: 2"))
        #expect((try await sync("--json", "stats").json() as? [String: Any])?["blocked"] as? Int == 1)
        let missing = try await sync("enqueue", "POST", fixture.url("/steps?n=orphan"), "--after", "99")
        #expect(missing.status == 65 && missing.stderr.contains("no entry 99 to wait for"))
        #expect(try await sync("enqueue", "POST", fixture.url("/steps?n=bad"), "--after", "0").status == 64)
        #expect(try await sync("drain", "--no-reachability").status == 0)
        #expect(arrivals.current == ["create", "tag"], "the child goes after its parent, whatever its priority; nothing else was stored")
        #expect((try await sync("--json", "show", "2").json() as? [String: Any])?["state"] as? String == "delivered")
        await fixture.finish()
    }

    @Test("enqueue refuses an entry that waits for itself and a --replace that closes a loop (65), nothing stored", arguments: [false, true])
    func loopsRefused(postgres: Bool) async throws {
        let fixture = try await Fixture(postgres: postgres)
        let sync = fixture.sync
        #expect(try await sync("enqueue", "POST", fixture.url("/a")).stdout == "1\n")
        #expect(try await sync("enqueue", "POST", fixture.url("/b")).stdout == "2\n")
        let own = try await sync("enqueue", "POST", fixture.url("/self"), "--after", "3")
        #expect(own.status == 65 && own.stderr.contains("entry 3 would wait for itself"), "\(own.stderr)")
        // The issue's second loop: 4 waits under k, 5 waits for 4, a replacement of 4 waiting for 5.
        let edit = try await sync("enqueue", "PUT", fixture.url("/note"), "--replace", "k")
        let child = try await sync("enqueue", "POST", fixture.url("/tag"), "--after", edit.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let edited = edit.stdout.trimmingCharacters(in: .whitespacesAndNewlines), tagged = child.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let closing = try await sync("enqueue", "PUT", fixture.url("/note?v=2"), "--replace", "k", "--after", tagged)
        #expect(closing.status == 65, "\(closing)")
        #expect(closing.stderr.contains("entry \(edited) would wait for itself, and never be sent: \(edited) waits for \(tagged), which waits for \(edited)"), "\(closing.stderr)")
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(stats["blocked"] as? Int == 1 && stats["superseded"] as? Int == 0 && stats["stuck"] as? [Int] == [])
        #expect(try await sync("drain", "--no-reachability").status == 0, "everything is delivered")
        await fixture.finish()
    }

    @Test("a loop stored by an earlier version: stats and drain say which entries nothing will release (drain exits 65); release --stuck sends them")
    func storedLoop() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        fixture.server.route("/steps") { _, writer in try await writer.respond(status: 201) }
        #expect(try await sync("enqueue", "POST", fixture.url("/steps?n=1")).stdout == "1\n")
        #expect(try await sync("enqueue", "POST", fixture.url("/steps?n=2"), "--after", "1").stdout == "2\n")
        #expect(try await sync("enqueue", "POST", fixture.url("/steps?n=3"), "--after", "2").stdout == "3\n")
        // As a version that did not refuse loops could write it: 1 waits for 2.
        let database = try DatabaseQueue(path: fixture.folder.appendingPathComponent("queue.db").path)
        try await database.write { db in
            try db.execute(sql: "INSERT INTO entry_edge (child, parent, when_parent_dies, parent_delivered) VALUES (1, 2, 'die', 0)")
            try db.execute(sql: "UPDATE entry SET state = 'blocked' WHERE id = 1")
        }
        try database.close()
        let stats = try await sync("stats")
        #expect(stats.stdout.contains("stuck      3 blocked entries nothing will release (1, 2, 3)"), "\(stats.stdout)")
        #expect((try await sync("--json", "stats").json() as? [String: Any])?["stuck"] as? [Int] == [1, 2, 3])
        let drain = try await sync("drain", "--no-reachability")
        #expect(drain.status == 65 && drain.stdout.contains("3 blocked entries nothing will release (1, 2, 3)"), "\(drain)")
        #expect((try await sync("--json", "drain", "--no-reachability").json() as? [String: Any])?["stuck"] as? [Int] == [1, 2, 3])
        let released = try await sync("release", "--stuck")
        #expect(released.status == 0 && released.stdout == "3 entries released, due now: 1, 2, 3\n", "\(released)")
        #expect(try await sync("drain", "--no-reachability").status == 0)
        #expect((try await sync("--json", "stats").json() as? [String: Any])?["delivered"] as? Int == 3)
        #expect(try await sync("release", "99").status == 65)
        #expect(try await sync("release").status == 64)
        await fixture.finish()
    }

    @Test("enqueue --keep-response, wait and show from outside: a waiter in another process wakes on the delivery (the .settled file, NOTIFY); dead exits 3, purged 4, open at its timeout 75, unknown 65", arguments: [false, true])
    func keptAndWaited(postgres: Bool) async throws {
        let fixture = try await Fixture(postgres: postgres)
        let sync = fixture.sync
        fixture.server.route("/notes") { _, writer in
            try await writer.respond(
                status: 201,
                headers: [HeaderField(name: "Location", value: "/notes/7"), HeaderField(name: "X-Title", value: "kept"),
                          HeaderField(name: "X-Other", value: "dropped")],
                body: Data("{\"id\":7,\"text\":\"\u{1B}[2J\"}".utf8)
            )
        }
        fixture.server.script("/refused", status: 422)
        let keep = ["--keep-header", "location", "--keep-header", "x-title"]
        #expect(try await sync.run(["enqueue", "POST", fixture.url("/notes")] + keep).stdout == "1\n")
        #expect(try await sync("enqueue", "POST", fixture.url("/refused"), "--keep-response").stdout == "2\n")
        #expect(try await sync("enqueue", "POST", fixture.url("/notes"), "--keep-body-limit", "2000000").status == 64)
        // A child that takes values from a parent's response, from outside; one that could not is refused.
        fixture.server.script("/made", status: 201, headers: [HeaderField(name: "X-Title", value: "kept")], body: Data("{\"id\": 7}".utf8))
        #expect(try await sync("enqueue", "POST", fixture.url("/made"), "--keep-header", "x-title").stdout == "3\n")
        fixture.server.keepBodies(of: "/echo/notes/7")
        let child = try await sync(
            "enqueue", "PUT", fixture.url("/echo/notes") + "/${response:3:/id}", "--after", "3",
            "-H", "X-Title: ${response:3:header:x-title}", "--data", "{\"n\": ${response:3:/id}, \"status\": \"${response:3:status}\"}"
        )
        #expect(child.stdout == "4\n", "\(child.stderr)")
        let refused = try await sync("enqueue", "GET", fixture.url("/echo"), "--after", "3", "-H", "If-Match: ${response:3:header:etag}")
        #expect(refused.status == 65 && refused.stderr.contains("does not keep header field etag"), "\(refused.stderr)")
        let shownChild = try #require(try await sync("--json", "show", "4").json() as? [String: Any])
        #expect(shownChild["takes_values_from"] as? [Int] == [3] && shownChild["after"] as? [Int] == [3])
        #expect((shownChild["url"] as? String)?.hasSuffix("/echo/notes/${response:3:/id}") == true, "shown as written: \(shownChild["url"] ?? "")")
        let open = try await sync("--json", "wait", "1", "--timeout", "0")
        #expect(open.status == 75)
        #expect((try open.json() as? [String: Any])?["outcome"] is NSNull)
        // A waiter in a process of its own that only the queue's word can wake within the guard.
        async let waited = sync.run(["--json", "wait", "1", "--recheck", "3600"])
        #expect(try await eventually { try await Self.listening(fixture, database: sync.database, postgres: postgres) }, "the waiter never watched")
        let drained = try await sync("drain", "--no-reachability")
        #expect(drained.status == 0, "\(drained.stdout) \(drained.stderr)")
        let delivered = try await waited
        #expect(delivered.status == 0, "\(delivered.stderr)")
        let outcome = try #require(try delivered.json() as? [String: Any])
        #expect(outcome["outcome"] as? String == "delivered" && outcome["status"] as? Int == 201)
        let response = try #require(outcome["response"] as? [String: Any])
        #expect(response["headers"] as? [[String]] == [["location", "/notes/7"], ["x-title", "kept"]])
        #expect(response["text"] as? String == "{\"id\":7,\"text\":\"\u{1B}[2J\"}" && response["truncated"] as? Bool == false)
        let childNow = try await sync("show", "4").stdout
        let sentChild = try #require(fixture.server.requests.first { $0.path == "/echo/notes/7" }, "\(childNow) \(fixture.server.requests.map(\.target))")
        #expect(sentChild.values(of: "X-Title") == ["kept"])
        #expect(fixture.server.bodies(of: "/echo/notes/7").first == Data("{\"n\": 7, \"status\": 201}".utf8))
        let shown = try #require(try await sync("--json", "show", "1").json() as? [String: Any])
        #expect((shown["response"] as? [String: Any])?["status"] as? Int == 201)
        #expect((shown["keeps_response"] as? [String: Any])?["headers"] as? [String] == ["location", "x-title"])
        let text = try await sync("show", "1").stdout
        #expect(text.contains("response: 201, ") && text.contains("location: /notes/7"), "\(text)")
        #expect(!text.contains("\u{1B}") && text.contains("\\x1b[2J"), "the body escaped for the terminal: \(text)")
        let dead = try await sync("wait", "2")
        #expect(dead.status == 3 && dead.stdout.hasPrefix("dead (rejected)"), "\(dead.stdout)")
        #expect(try await sync("purge", "1").status == 0)
        let purged = try await sync("--json", "wait", "1")
        #expect(purged.status == 4)
        #expect((try purged.json() as? [String: Any])?["outcome"] as? String == "purged")
        let unknown = try await sync("wait", "99")
        #expect(unknown.status == 65 && unknown.stderr.contains("no entry with id 99"))
        await fixture.finish()
    }

    @Test("enqueue --replace from outside: the waiting entry keeps its id and takes the edit, the old one is listed superseded; one request goes, the last")
    func coalesced() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        fixture.server.keepBodies(of: "/echo/notes/7")
        let url = fixture.url("/echo/notes/7")
        #expect(try await sync("enqueue", "PUT", url, "--data", "draft 1", "--replace", "note-7").stdout == "1\n")
        let second = try await sync("--json", "enqueue", "PUT", url, "--data", "draft 2", "--replace", "note-7")
        let ticket = try #require(try second.json() as? [String: Any])
        #expect(ticket["id"] as? Int == 1 && ticket["superseded"] as? Int == 2, "\(second.stdout)")
        let third = try await sync("enqueue", "PUT", url, "--data", "draft 3", "--replace", "note-7")
        #expect(third.stdout == "1\n" && third.stderr.contains("kept as entry 3, superseded"), "\(third.stderr)")
        let listed = try #require(try await sync("--json", "list", "--state", "superseded").json() as? [[String: Any]])
        #expect(listed.map { $0["id"] as? Int } == [2, 3])
        #expect((try await sync("--json", "stats").json() as? [String: Any])?["superseded"] as? Int == 2)
        #expect((try await sync("--json", "show", "1").json() as? [String: Any])?["coalescing_key"] as? String == "note-7")
        #expect(try await sync("enqueue", "PUT", url, "--replace", "").status == 65)
        #expect(try await sync("drain", "--no-reachability").status == 0)
        #expect(fixture.server.bodies(of: "/echo/notes/7") == [Data("draft 3".utf8)])
        await fixture.finish()
    }

    /// Whether a `sync wait` watches the queue: the `.settled` file beside a SQLite queue
    /// exists (its watcher makes it), or a connection listens on the PostgreSQL schema's channel.
    static func listening(_ fixture: Fixture, database: String, postgres: Bool) async throws -> Bool {
        guard postgres else { return FileManager.default.fileExists(atPath: database + ".settled") }
        let schema = database.components(separatedBy: "schema=").last ?? ""
        let query = "SELECT count(*) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND query LIKE '%\(schema).settled%'"
        let result = try await runTool("/usr/bin/psql", [String(database.prefix { $0 != "?" }), "-Atc", query])
        return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "1"
    }

    @Test("enqueue --name stores the name as given; without it the entry is named by method and origin, never the path")
    func names() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        let route = "POST /orders/{id}/items"
        #expect(try await sync("enqueue", "POST", fixture.url("/orders/42/items"), "--name", route).stdout == "1\n")
        #expect(try await sync("enqueue", "POST", fixture.url("/orders/43/items?page=2")).stdout == "2\n")
        #expect(try await sync("enqueue", "POST", fixture.url("/orders/44/items"), "--name", route, "--count", "2").status == 0)
        var names: [String?] = []
        for id in 1...4 {
            names.append(try #require(try await sync("--json", "show", "\(id)").json() as? [String: Any])["name"] as? String)
        }
        let origin = "http://127.0.0.1:\(fixture.server.port)"
        #expect(names == [route, "POST \(origin)", route, route])

        for bad in ["", "   ", "a\nb", "tab\there", "\u{202E}drawkcab", String(repeating: "n", count: 129)] {
            let refused = try await sync("enqueue", "POST", fixture.url("/echo"), "--name", bad)
            #expect(refused.status == 64, "\(bad.debugDescription): \(refused.stderr)")
            #expect(refused.stderr.contains("--name"), "\(refused.stderr)")
        }
        #expect(try await sync("enqueue", "POST", fixture.url("/echo"), "--name", "GET /café/{ünïcode} ✓").status == 0)
        let stats = try #require(try await sync("--json", "stats").json() as? [String: Any])
        #expect(stats["pending"] as? Int == 5)
        await fixture.finish()
    }

    @Test("exit codes: 64 usage, 65 bad data, 66 missing, 73 cannot create, 74 I/O, 75 try later")
    func exitCodes() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        // 64: bad usage.
        #expect(try await sync().status == 64)
        #expect(try await sync("enqueue", "POST").status == 64)
        #expect(try await sync("enqueue", "POST", fixture.url("/echo"), "-H", "no colon here").status == 64)
        #expect(try await sync("list", "--limit", "-1").status == 64)
        #expect(try await sync("purge", "--dead", "--older-than", "soon").status == 64)
        #expect(try await sync("retry").status == 64)

        // 66: a read-only command on a missing database; a missing data file.
        let missing = try await sync("stats")
        #expect(missing.status == 66)
        #expect(missing.stderr == "sync: no queue database at \(sync.database)\n")
        #expect(!FileManager.default.fileExists(atPath: sync.database), "a read-only command creates nothing")
        #expect(try await sync("enqueue", "POST", fixture.url("/echo"), "--data-file", "/nonexistent/body.json").status == 66)

        // 65: bad data.
        for (method, url) in [("POST", "not-a-url"), ("POST", "ftp://example.invalid/"), ("GE T", fixture.url("/echo"))] {
            let bad = try await sync("enqueue", method, url)
            #expect(bad.status == 65)
            #expect(bad.stderr.hasPrefix("sync: invalid request"))
        }
        let corrupt = fixture.folder.appendingPathComponent("corrupt.db").path
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: corrupt))
        let corruptRun = try await SyncRunner(database: corrupt)("list")
        #expect(corruptRun.status == 65)
        #expect(corruptRun.stderr.contains("not a valid queue database"))
        #expect(!corruptRun.stderr.contains("Fatal error"), "never a stack trace")

        // 73: cannot create.
        #expect(try await SyncRunner(database: "/proc/courier-sync-test/queue.db")("enqueue", "POST", fixture.url("/echo")).status == 73)

        // 74: the disk is full.
        let small = fixture.folder.appendingPathComponent("small").path
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        let tmpfs = try Tmpfs(at: small, size: "1m")
        defer { tmpfs.unmount() }
        let onSmall = SyncRunner(database: small + "/queue.db")
        #expect(try await onSmall("enqueue", "POST", fixture.url("/echo")).status == 0)
        let filler = small + "/filler"
        _ = FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: filler))
        while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
        try? handle.close()
        let full = try await onSmall("enqueue", "POST", fixture.url("/echo"), "--data", String(repeating: "x", count: 20_000))
        #expect(full.status == 74)
        #expect(full.stderr.contains("full"))

        // 75: entries remain, backing off.
        fixture.server.route("/busy") { _, writer in try await writer.respond(status: 503, headers: [HeaderField(name: "Retry-After", value: "120")]) }
        #expect(try await sync("enqueue", "POST", fixture.url("/busy")).status == 0)
        let later = try await sync("drain", "--no-reachability")
        #expect(later.status == 75)
        #expect(later.stdout.contains("1 entries remain; the next is due"))
        let laterJSON = try #require(try await sync("--json", "drain", "--no-reachability").json() as? [String: Any])
        #expect(laterJSON["remaining"] as? Int == 1)
        #expect(laterJSON["next_attempt_at"] is String)
        await fixture.finish()
    }

    @Test("what reaches the terminal is safe: URL passwords redacted, control characters escaped, seconds range-checked")
    func safeOutput() async throws {
        let fixture = try await Fixture()
        let sync = fixture.sync
        fixture.server.route("/hostile") { _, writer in
            try await writer.respond(status: 400, body: Data("nope\u{1B}[2J\u{1B}]0;owned\u{07}\u{202E}txt.exe".utf8))
        }
        var withPassword = URLComponents(url: fixture.server.url("/hostile"), resolvingAgainstBaseURL: false)!
        withPassword.user = "ops"
        withPassword.password = "pa55word"
        let enqueued = try await sync("enqueue", "POST", withPassword.string!, "--data", "line1\n\u{1B}[31mred\tcol")
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        _ = try await sync("drain", "--no-reachability")

        let listed = try await sync("list")
        #expect(listed.status == 0)
        #expect(!listed.stdout.contains("pa55word"), "\(listed.stdout)")
        #expect(listed.stdout.contains("ops:"))
        let listedJSON = try await sync("--json", "list")
        #expect(!listedJSON.stdout.contains("pa55word"))

        let shown = try await sync("show", "1")
        #expect(shown.status == 0)
        #expect(!shown.stdout.contains("pa55word"))
        #expect(!shown.stdout.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\u{202E}" }, "\(shown.stdout.debugDescription)")
        #expect(shown.stdout.contains("nope\\x1b[2J\\x1b]0;owned\\x07\\u{202e}txt.exe"), "\(shown.stdout)")
        #expect(shown.stdout.contains("line1\n\\x1b[31mred\tcol"), "a body keeps its line breaks and tabs: \(shown.stdout)")
        let revealed = try #require(try await sync("--json", "show", "1", "--reveal-secrets").json() as? [String: Any])
        #expect((revealed["url"] as? String)?.contains("pa55word") == true, "--reveal-secrets shows the URL as stored")

        for (command, option, value) in [("drain", "--timeout", "inf"), ("drain", "--timeout", "1e300"), ("drain", "--timeout", "nan"),
                                         ("run", "--poll", "inf"), ("run", "--timeout", "100000")] {
            let refused = try await sync(command, "--no-reachability", option, value)
            #expect(refused.status == 64, "\(command) \(option) \(value): \(refused.stderr)")
            #expect(refused.stderr.contains("\(option) must be a number of seconds"), "\(refused.stderr)")
        }
        await fixture.finish()
    }

    @Test("sync demo finishes with exit 0")
    func demo() async throws {
        let result = try await SyncRunner(database: "/unused")("demo")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("24 delivered, 0 pending, 0 dead"))
        #expect(result.stdout.contains("24 distinct idempotency keys"))
    }
}
