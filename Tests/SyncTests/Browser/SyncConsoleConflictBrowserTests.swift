import Foundation
import HTTPCore
import Testing
import TestSupport

extension SyncConsoleBrowserTests.Scene {
    /// Reloads entry `id`'s page as the admin until it shows `state` (a running drainer works
    /// meanwhile), at most the hang guard; returns the state it last showed.
    func reload(entry id: Int, until state: String) async throws -> String {
        var shown = ""
        _ = try await eventually {
            _ = try await browser.open(url("/entries/\(id)", as: SyncConsoleBrowserTests.admin))
            shown = try await browser.texts("dl.entry dd").first ?? ""
            if shown == state { return true }
            try await Task.sleep(for: .milliseconds(500))
            return false
        }
        return shown
    }
}

extension SyncConsoleBrowserTests {
    @Test("a 409 left for an operator: the overview counts it, its page shows the server's answer; Retry now sends it again as it is, and its group goes on after it")
    func conflictResolvedInTheBrowser() async throws {
        let ids = LockedBox<[Int]>([])
        try await scene(["run", "--no-reachability", "--poll", "0.2", "--console", "127.0.0.1:0"], prepare: { fixture in
            // The order conflicts once (409: only someone who knows the order can decide), then is taken.
            let calls = LockedBox(0)
            fixture.server.route("/orders/7") { _, writer in
                let call = calls.withLock { count -> Int in
                    count += 1
                    return count
                }
                if call == 1 { return try await writer.respond(status: 409, body: Data("{\"error\":\"<b>stock changed</b>\"}".utf8)) }
                try await writer.respond(status: 200)
            }
            let order = try await Self.enqueue(fixture.sync, "PUT", fixture.url("/orders/7"), "--group", "orders", "--name", "PUT /orders/{id}")
            let next = try await Self.enqueue(fixture.sync, "POST", fixture.url("/echo/after"), "--group", "orders")
            // 75: the entry after it remains, held by the conflict.
            let drained = try await fixture.sync("drain", "--no-reachability")
            #expect(drained.status == 75 && drained.stdout.contains("1 answers were conflicts left for an operator"), "\(drained.stdout)\(drained.stderr)")
            ids.withLock { $0 = [order, next] }
        }) { scene in
            let browser = scene.browser
            let (order, next) = (ids.current[0], ids.current[1])
            #expect(try await scene.stats()["conflict"] as? Int == 1)
            let overview = try await browser.open(scene.url("/", as: Self.admin))
            #expect(overview.text?.contains("Conflicts for an operator") == true)
            #expect(try await browser.texts("a[href$='/entries?state=conflict']") == ["1"])
            let page = try await browser.click(css: "a[href$='/entries?state=conflict']")
            #expect(try await browser.count("table.entries tbody tr") == 1, "\(page.text ?? "")")
            _ = try await browser.click(css: "table.entries a[href$='/entries/\(order)']")
            #expect(try await browser.texts("dd.state-conflict") == ["conflict"])
            // The server's answer, escaped: its markup is text.
            #expect(try await browser.texts("dl.entry pre").contains("{\"error\":\"<b>stock changed</b>\"}"))
            #expect(try await browser.count("dl.entry b") == 0)
            #expect(scene.fixture.server.requests.filter { $0.path == "/echo/after" }.isEmpty, "the group waits behind the conflict")
            let retried = try await browser.click(button: "Retry now")
            #expect(try await browser.texts("p.notice") == ["retried 1"], "\(retried.text ?? "")")
            let state = try await scene.reload(entry: next, until: "delivered")
            #expect(state == "delivered", "the entry after it: \(state)")
            let stats = try await scene.stats()
            #expect(stats["delivered"] as? Int == 2 && stats["conflict"] as? Int == 0, "\(stats)")
            #expect(scene.fixture.server.requests.filter { $0.path == "/orders/7" }.count == 2)
        }
    }
}
