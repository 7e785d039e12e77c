import Foundation
import GRDB
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The console in a real browser: headless Chromium, driven by Selenium (`BrowserSession`),
/// against a real `sync console` or `sync run --console` on loopback and a real SQLite queue.
/// Each test is a scenario an operator (or an attacker) plays; the queue is checked with
/// `sync --json stats` and `list`, never only through the page.
///
/// One test at a time (each starts a browser; two cores are shared with the other suites);
/// every wait has a limit, and nothing is timed.
@Suite("sync console in a browser", .serialized, .enabled("needs chromium, chromium-driver and selenium (Tools/test installs them)") { await BrowserSession.shouldRun() })
struct SyncConsoleBrowserTests {
    static let admin = (name: "ops", password: "browser-pass-1")
    static let reader = (name: "viewer", password: "viewer-pass-2")
    static let securityHeaders = [
        "content-security-policy": "default-src 'self'; form-action 'self'; frame-ancestors 'none'",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
    ]

    /// A queue, a `sync` serving its console, a browser, and the way to reach the console as a user.
    struct Scene {
        let fixture: SyncCommandTests.Fixture
        let served: SyncConsoleTests.Served
        let browser: BrowserSession

        var sync: SyncRunner { fixture.sync }

        /// The console's URL for `path`; with a user, carrying their credentials
        /// (`http://name:password@host:port/path`), which Chromium answers the 401 with.
        func url(_ path: String, as user: (name: String, password: String)? = nil) -> String {
            let base = served.base.absoluteString.hasSuffix("/") ? String(served.base.absoluteString.dropLast()) : served.base.absoluteString
            guard let user else { return base + path }
            return base.replacingOccurrences(of: "http://", with: "http://\(user.name):\(user.password)@") + path
        }

        /// `sync --json stats`.
        func stats() async throws -> [String: Any] {
            let result = try await sync("--json", "stats")
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try result.json() as? [String: Any])
        }

        /// The ids of the entries `sync --json list` shows.
        func listedIDs() async throws -> [Int] {
            let result = try await sync("--json", "list", "--limit", "1000")
            #expect(result.status == 0, "\(result.stderr)")
            let entries = try #require(try result.json() as? [[String: Any]])
            return entries.compactMap { $0["id"] as? Int }.sorted()
        }
    }

    /// Prepares a queue with `prepare`, starts `sync arguments…` on it (with the users file
    /// `--credentials` unless `users` is false) and a browser, runs `body`, and stops all of them
    /// however `body` ends.
    func scene(
        _ arguments: [String] = ["console", "--address", "127.0.0.1:0"],
        users: Bool = true,
        prepare: (SyncCommandTests.Fixture) async throws -> Void = { _ in },
        _ body: (Scene) async throws -> Void
    ) async throws {
        let fixture = try await SyncCommandTests.Fixture()
        var served: SyncConsoleTests.Served?
        var browser: BrowserSession?
        do {
            // The browser first: when it is missing (under CI), that is the one failure to see.
            browser = try await BrowserSession.start()
            try await prepare(fixture)
            var arguments = arguments
            if users { arguments += ["--credentials", try await Self.writeUsers(fixture)] }
            served = try await SyncConsoleTests.Served.start(fixture.sync, arguments)
            let scene = Scene(fixture: fixture, served: try #require(served), browser: try #require(browser))
            try await body(scene)
            await browser?.close()
            let status = try await scene.served.stop()
            #expect(status == 0, "\(scene.served.log.text.current)")
            await fixture.finish()
        } catch {
            await browser?.close()
            _ = try? await served?.stop()
            if let served { Issue.record("sync's log: \(served.log.text.current.suffix(4000))") }
            await fixture.finish()
            throw error
        }
    }

    /// A users file with an admin and a read-only user (cheap hashes: a test is no attack).
    static func writeUsers(_ fixture: SyncCommandTests.Fixture) async throws -> String {
        let path = fixture.folder.appendingPathComponent("console-users").path
        for (user, role) in [(admin, "admin"), (reader, "read")] {
            let added = try await fixture.sync.run(
                ["console", "add-user", user.name, "--role", role, "--credentials", path, "--iterations", "1000"],
                input: user.password + "\n")
            #expect(added.status == 0, "\(added.stderr)")
        }
        return path
    }

    /// Where screenshots go: `.build/artifacts` of this package.
    static var artifacts: URL {
        // This file is Tests/SyncTests/Browser/SyncConsoleBrowserTests.swift: four levels below the root.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/artifacts")
    }

    /// Enqueues `arguments` (after `enqueue`) and returns the new entry's id.
    @discardableResult
    static func enqueue(_ sync: SyncRunner, _ arguments: String...) async throws -> Int {
        let result = try await sync.run(["enqueue"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(result.stdout)")
    }

    /// The rows of the entries table as dictionaries keyed by the header's names (Id, State, …).
    static func entryRows(_ browser: BrowserSession) async throws -> [[String: String]] {
        let rows = try await browser.table("table.entries")
        guard let header = rows.first else { return [] }
        return rows.dropFirst().map { cells in
            Dictionary(zip(header, cells).map { ($0, $1) }, uniquingKeysWith: { first, _ in first })
        }
    }

    // MARK: Scenarios

    @Test("sign in: without credentials 401 (with WWW-Authenticate's page); with them the overview, whose counts are sync --json stats'")
    func signInAndOverview() async throws {
        try await scene(prepare: { fixture in
            let sync = fixture.sync
            for index in 0..<2 { try await Self.enqueue(sync, "POST", fixture.url("/echo?n=\(index)")) }
            try await Self.enqueue(sync, "POST", fixture.url("/status/404"))
            #expect(try await sync("drain").status == 0)
            try await Self.enqueue(sync, "POST", fixture.url("/echo?n=late"), "--group", "g1")
            try await Self.enqueue(sync, "POST", fixture.url("/echo?n=later"))
            #expect(try await sync("pause", "--group", "g1").status == 0)
        }) { scene in
            let browser = scene.browser
            let refused = try await browser.open(scene.url("/"))
            #expect(refused.status == 401, "\(refused)")
            #expect(refused.headers?["www-authenticate"]?.hasPrefix("Basic realm=") == true)
            #expect(refused.text?.contains("Pending") != true, "no counts without a user")

            let page = try await browser.open(scene.url("/", as: Self.admin))
            #expect(page.status == 200, "\(page)")
            #expect(page.title == "Overview · Courier queue", "\(page.title ?? "")")
            for (name, value) in Self.securityHeaders { #expect(page.headers?[name] == value, "\(name): \(page.headers ?? [:])") }
            #expect(try await browser.texts("header .user") == ["ops"])

            let stats = try await scene.stats()
            var shown: [String: Int] = [:]
            for row in try await browser.table("table.counts") where row.count == 2 { shown[row[0]] = Int(row[1]) }
            let keys = ["Pending": "pending", "Due now": "due", "In flight": "inflight", "Held by a dead owner": "inflight_orphaned", "Delivered": "delivered", "Dead": "dead",
                        "Waiting for other entries": "blocked", "Conflicts for an operator": "conflict"]
            // And the entries waiting for the network, which `sync stats` does not count: none here.
            #expect(Set(shown.keys) == Set(keys.keys).union(["Waiting for the network"]), "\(shown)")
            #expect(shown["Waiting for the network"] == 0)
            for (label, key) in keys {
                #expect(shown[label] != nil && shown[label] == stats[key] as? Int, "\(label): the page shows \(shown[label].map(String.init) ?? "nothing"), stats \(stats[key] ?? "nil")")
            }
            #expect(shown["Pending"] == 2 && shown["Delivered"] == 2 && shown["Dead"] == 1)
            #expect(try await browser.texts("ul li a").contains("g1"), "the paused group is listed")
            try await browser.screenshot(Self.artifacts.appendingPathComponent("console-overview.png"))
        }
    }

    @Test("filter the entries by state, group and name; open one: its credential header redacted, its secret nowhere in the page")
    func filterAndOpenEntry() async throws {
        let ids = LockedBox<[String: Int]>([:])
        try await scene(prepare: { fixture in
            let sync = fixture.sync
            let dead = try await Self.enqueue(sync, "POST", fixture.url("/status/404"), "--name", "POST /missing")
            #expect(try await sync("drain").status == 0)
            let order = try await Self.enqueue(sync, "POST", fixture.url("/echo?n=1"), "--name", "POST /orders", "--group", "g1",
                                               "-H", "Authorization: Bearer s3cr3t-token", "-H", "Content-Type: application/json",
                                               "--data", #"{"sku":7}"#, "--store-secrets")
            let file = try await Self.enqueue(sync, "PUT", fixture.url("/echo?n=2"), "--name", "PUT /files", "--group", "g2")
            ids.withLock { $0 = ["dead": dead, "order": order, "file": file] }
        }) { scene in
            let browser = scene.browser
            let id = ids.current
            let all = try await browser.open(scene.url("/entries", as: Self.admin))
            #expect(all.status == 200)
            #expect(try await Self.entryRows(browser).compactMap { Int($0["Id"] ?? "") } == [id["dead"], id["order"], id["file"]].compactMap { $0 })

            try await browser.select("form.filter select[name=state]", "dead")
            let dead = try await browser.click(button: "Filter")
            #expect(dead.url?.contains("state=dead") == true, "\(dead.url ?? "")")
            var rows = try await Self.entryRows(browser)
            #expect(rows.map { $0["Id"] } == ["\(id["dead"]!)"] && rows.first?["State"] == "dead", "\(rows)")

            try await browser.select("form.filter select[name=state]", "")
            try await browser.fill("form.filter input[name=group]", "g1")
            _ = try await browser.click(button: "Filter")
            rows = try await Self.entryRows(browser)
            #expect(rows.map { $0["Id"] } == ["\(id["order"]!)"] && rows.first?["Group"] == "g1", "\(rows)")

            try await browser.fill("form.filter input[name=group]", "")
            try await browser.fill("form.filter input[name=name]", "PUT /files")
            let byName = try await browser.click(button: "Filter")
            rows = try await Self.entryRows(browser)
            #expect(rows.map { $0["Id"] } == ["\(id["file"]!)"] && rows.first?["Name"] == "PUT /files", "\(rows) at \(byName.url ?? "")")

            _ = try await browser.open(scene.url("/entries?group=g1", as: Self.admin))
            let entry = try await browser.click(css: "table.entries a[href$='/entries/\(id["order"]!)']")
            #expect(entry.status == 200 && entry.url?.hasSuffix("/entries/\(id["order"]!)") == true, "\(entry.url ?? "")")
            let text = entry.text ?? ""
            #expect(text.contains("Entry \(id["order"]!)"))
            #expect(text.contains("POST /orders") && text.contains("/echo?n=1"), "\(text)")
            #expect(try await browser.texts("dl.entry li").contains("Authorization: redacted"), "\(text)")
            #expect(text.contains("9 bytes, hidden"), "the body's size, not the body: \(text)")
            #expect(try await browser.eval("return document.documentElement.outerHTML.includes('s3cr3t')") == .bool(false))
            #expect(try await browser.eval("return document.documentElement.outerHTML.includes('sku')") == .bool(false))
            try await browser.screenshot(Self.artifacts.appendingPathComponent("console-entry.png"))
        }
    }

    @Test("page through a filtered list by its Next link: every entry of the group once, in order, the filter kept")
    func pageByNextLink() async throws {
        let expected = LockedBox<[Int]>([])
        try await scene(prepare: { fixture in
            var ids: [Int] = []
            for index in 0..<9 {
                let id = try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo?n=\(index)"), "--group", index % 4 == 3 ? "g2" : "g1")
                if index % 4 != 3 { ids.append(id) }
            }
            expected.withLock { $0 = ids }
        }) { scene in
            let browser = scene.browser
            var page = try await browser.open(scene.url("/entries?group=g1&limit=3", as: Self.admin))
            var seen: [Int] = []
            var pages = 0
            while true {
                pages += 1
                let rows = try await Self.entryRows(browser)
                #expect(rows.count <= 3 && rows.allSatisfy { $0["Group"] == "g1" }, "\(page.url ?? ""): \(rows)")
                seen += rows.compactMap { Int($0["Id"] ?? "") }
                guard pages < 10, try await browser.count("a[rel=next]") == 1 else { break }
                page = try await browser.click(css: "a[rel=next]")
                #expect(page.url?.contains("group=g1") == true && page.url?.contains("limit=3") == true, "\(page.url ?? "")")
            }
            #expect(seen == expected.current, "\(seen)")
            #expect(pages == 3)
        }
    }

    @Test("retry a dead entry from its page: sync run delivers it, the loopback server gets it again, the page shows it delivered")
    func retryDeadEntry() async throws {
        let dead = LockedBox(0)
        try await scene(["run", "--no-reachability", "--poll", "0.2", "--console", "127.0.0.1:0"], prepare: { fixture in
            // 422 is final: the entry is dead after one attempt; the route answers 200 from then on.
            fixture.failOnce("/flaky", status: 422)
            let id = try await Self.enqueue(fixture.sync, "POST", fixture.url("/flaky"), "--name", "POST /flaky")
            #expect(try await fixture.sync("drain").status == 0)
            dead.withLock { $0 = id }
        }) { scene in
            let browser = scene.browser
            let id = dead.current
            #expect(scene.fixture.server.requests.filter { $0.path == "/flaky" }.count == 1)
            let page = try await browser.open(scene.url("/entries/\(id)", as: Self.admin))
            #expect(try await browser.texts("dd.state-dead").first?.hasPrefix("dead") == true, "\(page.text ?? "")")
            let retried = try await browser.click(button: "Retry now")
            #expect(retried.status == 200 && retried.url?.contains("/entries/\(id)") == true, "\(retried.url ?? "")")
            #expect(try await browser.texts("p.notice") == ["retried 1"], "\(retried.text ?? "")")

            // The running drainer takes it: reload the page until it says so.
            let state = try await scene.reload(entry: id, until: "delivered")
            #expect(state == "delivered", "the entry's state: \(state)")
            #expect(scene.fixture.server.requests.filter { $0.path == "/flaky" }.count == 2)
            let stats = try await scene.stats()
            #expect(stats["delivered"] as? Int == 1 && stats["dead"] as? Int == 0, "\(stats)")
            #expect(scene.served.log.text.current.contains("console action"), "the retry is audited")
        }
    }

    @Test("pause and resume the queue and a group from the overview; sync stats agrees after each step")
    func pauseAndResume() async throws {
        try await scene(prepare: { fixture in
            try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo"), "--group", "g1")
        }) { scene in
            let browser = scene.browser
            _ = try await browser.open(scene.url("/", as: Self.admin))
            #expect(try await browser.count("p.paused") == 0)

            let paused = try await browser.click(button: "Pause the queue")
            #expect(try await browser.texts("p.notice") == ["paused the queue"], "\(paused.text ?? "")")
            #expect(try await browser.count("p.paused") == 1)
            #expect(try await scene.stats()["paused"] as? Bool == true)

            let resumed = try await browser.click(button: "Resume the queue")
            #expect(try await browser.texts("p.notice") == ["resumed the queue"], "\(resumed.text ?? "")")
            #expect(try await browser.count("p.paused") == 0)
            #expect(try await scene.stats()["paused"] as? Bool == false)

            try await browser.fill("input[name=group]:not([type=hidden])", "g1")
            let groupPaused = try await browser.click(button: "Pause group")
            #expect(try await browser.texts("p.notice") == ["paused group g1"], "\(groupPaused.text ?? "")")
            #expect(try await scene.stats()["paused_groups"] as? [String] == ["g1"])
            #expect(try await scene.stats()["pending_paused"] as? Int == 1)

            let groupResumed = try await browser.click(css: "ul li form button")
            #expect(try await browser.texts("p.notice") == ["resumed group g1"], "\(groupResumed.text ?? "")")
            #expect(try await scene.stats()["paused_groups"] as? [String] == [])
            let audit = scene.served.log.text.current.split(separator: "\n").filter { $0.contains("console action") && $0.contains("user=ops") }
            #expect(audit.count == 4, "\(audit)")
        }
    }

    @Test("bulk discard of all matching a filter: the confirmation shows the count; confirmed, those entries go, one enqueued after the count stays")
    func bulkDiscardMatching() async throws {
        try await scene(prepare: { fixture in
            for index in 1...3 { try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo?g1=\(index)"), "--group", "g1") }
            for index in 1...2 { try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo?g2=\(index)"), "--group", "g2") }
        }) { scene in
            let browser = scene.browser
            _ = try await browser.open(scene.url("/entries", as: Self.admin))
            try await browser.fill("form.filter input[name=group]", "g1")
            _ = try await browser.click(button: "Filter")
            #expect(try await Self.entryRows(browser).compactMap { $0["Id"] } == ["1", "2", "3"])
            let confirmation = try await browser.click(button: "Discard all matching…")
            #expect(confirmation.status == 200, "\(confirmation)")
            #expect(try await browser.texts("p.notice strong") == ["3"], "\(confirmation.text ?? "")")
            #expect(try await scene.listedIDs() == [1, 2, 3, 4, 5], "nothing changes before the confirmation")
            // Enqueued while the operator reads the count: not among those counted, so left alone.
            let later = try await Self.enqueue(scene.sync, "POST", scene.fixture.url("/echo?g1=4"), "--group", "g1")
            let done = try await browser.click(button: "Discard 3 entries")
            #expect(done.status == 200, "\(done)")
            #expect(try await browser.texts("p.notice") == ["discarded 3 matching entries"], "\(done.text ?? "")")
            #expect(done.url?.contains("group=g1") == true, "back to the filtered list: \(done.url ?? "")")
            #expect(try await scene.listedIDs() == [4, 5, later])
            #expect(scene.served.log.text.current.contains("console action"), "the bulk action is audited")
        }
    }

    @Test("bulk discard: check two entries in the list, discard them; the others stay")
    func bulkDiscardSelected() async throws {
        try await scene(prepare: { fixture in
            for index in 1...4 { try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo?n=\(index)")) }
        }) { scene in
            let browser = scene.browser
            #expect(try await scene.listedIDs() == [1, 2, 3, 4])
            _ = try await browser.open(scene.url("/entries", as: Self.admin))
            #expect(try await browser.check("input[type=checkbox][value='2']"))
            #expect(try await browser.check("input[type=checkbox][value='3']"))
            let discarded = try await browser.click(button: "Discard selected")
            #expect(discarded.status == 200, "\(discarded)")
            #expect(try await browser.texts("p.notice") == ["discarded 2"], "\(discarded.text ?? "")")
            #expect(try await Self.entryRows(browser).compactMap { $0["Id"] } == ["1", "4"])
            #expect(try await scene.listedIDs() == [1, 4])
            #expect(try await scene.stats()["pending"] as? Int == 2)
        }
    }

    @Test("a read-only user sees no form and no checkbox; a forged POST from its page gets 403 and changes nothing")
    func readOnlyUser() async throws {
        try await scene(prepare: { fixture in
            try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo"))
            try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo"), "--group", "g1")
            #expect(try await fixture.sync("pause", "--group", "g1").status == 0)
        }) { scene in
            let browser = scene.browser
            let before = try await scene.stats()
            for path in ["/", "/entries", "/entries/1"] {
                let page = try await browser.open(scene.url(path, as: Self.reader))
                #expect(page.status == 200, "\(path): \(page)")
                #expect(try await browser.count("form[method=post]") == 0, "\(path) has an action form")
                #expect(try await browser.count("input[type=checkbox]") == 0, "\(path) has a checkbox")
                #expect(try await browser.texts("header .user") == ["viewer (read-only)"])
            }
            _ = try await browser.open(scene.url("/", as: Self.reader))
            for (action, fields) in [("/pause", []), ("/resume", [("group", "g1")]), ("/bulk/discard", [("id", "1")]), ("/entries/1/discard", []), ("/purge-delivered", [])] {
                let forged = try await browser.injectForm(action: scene.url(action), fields: fields)
                #expect(forged.status == 403, "\(action): \(forged)")
                #expect(forged.text?.contains("read-only user") == true, "\(action): \(forged.text ?? "")")
                _ = try await browser.open(scene.url("/", as: Self.reader))
            }
            let after = try await scene.stats()
            for key in ["pending", "paused", "paused_groups", "pending_paused"] {
                #expect("\(after[key] ?? "nil")" == "\(before[key] ?? "nil")", "\(key) changed: \(before[key] ?? "nil") → \(after[key] ?? "nil")")
            }
            #expect(try await scene.listedIDs() == [1, 2])
            #expect(scene.served.log.text.current.contains("refused a read-only user's change"))
        }
    }

    /// Without users, as `sync console` runs on a workstation, any page the operator visits
    /// could post to it, and only the cross-origin check stands in the way; with users, the
    /// operator signed in first, so the browser holds an admin's credentials for the console.
    @Test("a page on another site (and on another port of this host) that posts a form to the console gets 403 and changes nothing; the same form from the console's own page works", arguments: [false, true])
    func crossSitePostRefused(signedIn: Bool) async throws {
        try await scene(users: signedIn, prepare: { fixture in
            try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo"))
        }) { scene in
            let browser = scene.browser
            let server = scene.fixture.server
            if signedIn {
                let page = try await browser.open(scene.url("/", as: Self.admin))
                #expect(page.status == 200, "\(page)")
                #expect(try await browser.texts("header .user") == ["ops"])
            }
            for (path, action, fields) in [("/evil/pause", "/pause", ""), ("/evil/discard", "/bulk/discard", #"<input type="hidden" name="id" value="1">"#)] {
                let html = """
                <!doctype html><html><head><title>Win a prize</title></head>
                <body onload="document.forms[0].submit()">
                <form method="post" action="\(scene.url(action))">\(fields)<button>Go</button></form></body></html>
                """
                server.script(path, headers: [HeaderField(name: "Content-Type", value: "text/html; charset=utf-8")], body: Data(html.utf8))
            }
            let console = scene.url("/")
            // localhost is another site than 127.0.0.1 (Sec-Fetch-Site: cross-site); another port
            // of 127.0.0.1 is the same site but another origin (same-site): both refused.
            for host in ["localhost", "127.0.0.1"] {
                for path in ["/evil/pause", "/evil/discard"] {
                    let evil = "http://\(host):\(server.port)\(path)"
                    let landed = try await browser.open(evil, until: console)
                    #expect(landed.status == 403, "\(evil): \(landed)")
                    #expect(landed.text?.contains("cross-origin request refused") == true, "\(evil): \(landed.text ?? "")")
                    for (name, value) in Self.securityHeaders { #expect(landed.headers?[name] == value, "\(name) on the 403") }
                }
            }
            var stats = try await scene.stats()
            #expect(stats["paused"] as? Bool == false && stats["pending"] as? Int == 1, "\(stats)")
            #expect(try await scene.listedIDs() == [1])
            #expect(scene.served.log.text.current.components(separatedBy: "refused a cross-origin request").count - 1 == 4)

            // The same request from the console's own page passes: the refusal was the origin's.
            _ = try await browser.open(console)
            let own = try await browser.injectForm(action: scene.url("/pause"))
            #expect(own.status == 200, "\(own)")
            #expect(try await browser.texts("p.notice") == ["paused the queue"])
            stats = try await scene.stats()
            #expect(stats["paused"] as? Bool == true)
        }
    }

    @Test("behind a path prefix (--console-prefix /queue) every link, form and the stylesheet carry it: a walk by clicks stays under /queue")
    func pathPrefix() async throws {
        try await scene(["console", "--address", "127.0.0.1:0", "--console-prefix", "/queue"], prepare: { fixture in
            try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo"), "--group", "g1")
            try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo"))
        }) { scene in
            let browser = scene.browser
            let host = try #require(scene.served.base.host), port = try #require(scene.served.base.port)
            let origin = "http://\(host):\(port)"
            let signedIn = "http://\(Self.admin.name):\(Self.admin.password)@\(host):\(port)"
            let outside = try await browser.open(signedIn + "/")
            #expect(outside.status == 404, "nothing outside the prefix: \(outside)")

            var page = try await browser.open(signedIn + "/queue/")
            #expect(page.status == 200, "\(page)")
            // The stylesheet, served under the prefix, is applied: the CSP lets 'self' through.
            #expect(try await browser.eval("return getComputedStyle(document.querySelector('header')).backgroundColor") == .string("rgb(34, 34, 51)"))
            func linksStayUnder() async throws {
                let targets = try await browser.attributes("a", "href").compactMap { $0 } + browser.attributes("form", "action").compactMap { $0 }
                    + browser.attributes("link[rel=stylesheet]", "href").compactMap { $0 }
                #expect(!targets.isEmpty)
                for target in targets {
                    // Chromium answers the resolved URL, the page's credentials dropped or kept.
                    let plain = target.replacingOccurrences(of: "\(Self.admin.name):\(Self.admin.password)@", with: "")
                    #expect(plain.hasPrefix(origin + "/queue/"), "\(page.url ?? ""): \(target)")
                }
            }
            try await linksStayUnder()
            page = try await browser.click(css: "header nav a[href$='/entries']")
            #expect(page.status == 200 && page.url?.hasSuffix("/queue/entries") == true, "\(page.url ?? "")")
            try await linksStayUnder()
            page = try await browser.click(css: "table.entries a[href$='/entries/1']")
            #expect(page.status == 200 && page.url?.hasSuffix("/queue/entries/1") == true, "\(page.url ?? "")")
            try await linksStayUnder()
            page = try await browser.click(button: "Discard")
            #expect(page.status == 200 && page.url?.contains("/queue/entries?notice=") == true, "\(page.url ?? "")")
            #expect(try await browser.texts("p.notice") == ["discarded 1"])
            try await linksStayUnder()
            try await browser.select("form.filter select[name=state]", "pending")
            page = try await browser.click(button: "Filter")
            #expect(page.url?.contains("/queue/entries?state=pending") == true, "\(page.url ?? "")")
            page = try await browser.click(css: "header nav a[href$='/queue/']")
            page = try await browser.click(button: "Pause the queue")
            #expect(page.status == 200 && page.url?.contains("/queue/?notice=") == true, "\(page.url ?? "")")
            #expect(try await scene.stats()["paused"] as? Bool == true)
            #expect(try await scene.listedIDs() == [2])
        }
    }

    @Test("entries whose URL, headers, name, group and response carry <script>, onerror and javascript: payloads render as inert text; the CSP is in force")
    func hostileEntriesRenderInert() async throws {
        let payloads = (
            script: "<script>window.__pwned='script';document.title='pwned'</script>",
            image: #""><img src=x onerror="window.__pwned='img';document.title='pwned'">"#,
            link: "javascript:window.__pwned='js';document.title='pwned'",
            svg: "<svg onload=\"window.__pwned='svg'\"></svg>"
        )
        let ids = LockedBox<[Int]>([])
        try await scene(prepare: { fixture in
            let sync = fixture.sync
            let excerpt = payloads.script + payloads.image + payloads.svg
            fixture.server.script("/hostile", status: 400, headers: [HeaderField(name: "Content-Type", value: "text/html")], body: Data(excerpt.utf8))
            // The URLs as typed, not through URL(string:), which would percent-encode them.
            let base = fixture.server.baseURL.absoluteString
            let rejected = try await Self.enqueue(
                sync, "POST", base + "/hostile?q=\(payloads.script)&r=\(payloads.image)",
                "--name", payloads.script, "--group", payloads.image,
                "-H", "X-Note: \(payloads.image)", "-H", "X-Link: \(payloads.link)", "-H", "X-Svg: \(payloads.svg)")
            #expect(try await sync("drain").status == 0)
            let pending = try await Self.enqueue(sync, "POST", base + "/echo#\(payloads.link)", "--name", payloads.link, "--group", payloads.link)
            let third = try await Self.enqueue(sync, "POST", fixture.url("/echo"), "--name", payloads.svg, "--group", payloads.svg)
            for group in [payloads.image, payloads.link, payloads.svg] {
                #expect(try await sync("pause", "--group", group).status == 0)
            }
            // `sync enqueue` percent-encodes a URL, and a failed attempt's error is the queue's
            // own words; another writer of a shared store may not be so careful: put the
            // payloads in those columns as they are.
            try await DatabaseQueue(path: sync.database).write { db in
                try db.execute(sql: "UPDATE entry SET url = ? WHERE id = ?", arguments: [base + "/echo?q=\(payloads.script)&r=\(payloads.image)", third])
                try db.execute(sql: "UPDATE entry SET last_error = ? WHERE id = ?", arguments: [payloads.image + payloads.script, rejected])
            }
            ids.withLock { $0 = [rejected, pending, third] }
        }) { scene in
            let browser = scene.browser
            let id = ids.current
            let encoded = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
            let pages = ["/", "/entries", "/entries?state=dead"] + id.map { "/entries/\($0)" } + [
                "/entries?group=\(encoded(payloads.image))", "/entries?name=\(encoded(payloads.script))",
                "/entries?origin=\(encoded(payloads.link))", "/?notice=\(encoded(payloads.script + payloads.image))",
            ]
            for path in pages {
                let page = try await browser.open(scene.url(path, as: Self.admin))
                #expect(page.status == 200, "\(path): \(page.status.map(String.init) ?? "no status")")
                #expect(page.alert == nil, "\(path) opened an alert: \(page.alert ?? "")")
                #expect(page.title?.contains("pwned") == false, "\(path): title \(page.title ?? "")")
                #expect(try await browser.eval("return typeof window.__pwned") == .string("undefined"), "\(path): a payload ran")
                // The overview's one SVG is its chart (`figure.chart > svg`), drawn by the server.
                #expect(try await browser.count("script, img, svg:not(figure.chart > svg), iframe, object, embed") == 0, "\(path): an injected element")
                #expect(try await browser.count("svg") <= 1, "\(path): an injected SVG")
                #expect(try await browser.count("svg [onload], svg script, svg foreignObject, svg a") == 0, "\(path): an injected SVG")
                #expect(try await browser.count("[onerror], [onload], [onclick]") == 0, "\(path): an injected handler")
                let links = try await browser.attributes("a, form", "href").compactMap { $0 } + browser.attributes("form", "action").compactMap { $0 }
                #expect(!links.contains { $0.lowercased().hasPrefix("javascript:") }, "\(path): \(links)")
                for (name, value) in Self.securityHeaders { #expect(page.headers?[name] == value, "\(path): \(name)") }
            }
            // The payloads are there, as text.
            let rejected = try await browser.open(scene.url("/entries/\(id[0])", as: Self.admin))
            let text = rejected.text ?? ""
            for payload in [payloads.script, payloads.image, payloads.link, payloads.svg] {
                #expect(text.contains(payload), "\(payload) is not shown as text: \(text)")
            }
            let raw = try await browser.open(scene.url("/entries/\(id[2])", as: Self.admin))
            #expect(raw.text?.contains("/echo?q=\(payloads.script)&r=\(payloads.image)") == true, "\(raw.text ?? "")")
            let overview = try await browser.open(scene.url("/", as: Self.admin))
            #expect(overview.text?.contains(payloads.image) == true && overview.text?.contains(payloads.link) == true, "\(overview.text ?? "")")

            // The policy itself: an inline handler that a page did carry would not run.
            let violated = try await browser.evalAsync("""
                const done = arguments[0];
                document.addEventListener('securitypolicyviolation', event => done(event.violatedDirective), {once: true});
                const holder = document.createElement('div');
                holder.innerHTML = '<img src="/no-such-image" onerror="window.__csp = true">';
                document.body.appendChild(holder);
                """)
            #expect(violated == .string("script-src-attr") || violated == .string("default-src"), "\(String(describing: violated))")
            #expect(try await browser.eval("return typeof window.__csp") == .string("undefined"))
            let stats = try await scene.stats()
            #expect(stats["dead"] as? Int == 1 && stats["pending"] as? Int == 2, "\(stats)")
        }
    }
}
