import Foundation
import HTTPCore
import HTTPTypes
import NIOCore
import Hummingbird
import HummingbirdTesting
import OfflineQueue
@testable import QueueConsole
import Testing

@Suite("QueueConsole live updates and signed-in users")
struct ConsoleRefreshTests {
    @Test func refreshIntervalIsKeptInTheURLWithoutScript() async throws {
        try await ConsoleFixture.with { fixture, client in
            try await fixture.enqueue("/missing", name: "orders")
            try await fixture.drain()
            let overview = try await client.send(.get, "/?refresh=5").text
            #expect(overview.contains(#"<meta http-equiv="refresh" content="5">"#))
            #expect(overview.contains(#"<a href="/?refresh=5">Overview</a> <a href="/entries?refresh=5">Entries</a>"#))
            #expect(overview.contains(#"<option value="5" selected>5 s</option>"#))
            #expect(!overview.contains("<script"))
            // The entries page keeps its filter in the refresh form, and the interval in its filter form and next link.
            let entries = try await client.send(.get, "/entries?state=dead&name=orders&refresh=10&limit=1").text
            #expect(entries.contains(#"<meta http-equiv="refresh" content="10">"#))
            #expect(entries.contains(#"<form method="get" action="/entries" class="refresh"><input type="hidden" name="state" value="dead"><input type="hidden" name="name" value="orders"><input type="hidden" name="limit" value="1">"#))
            #expect(entries.contains(#"<input type="hidden" name="refresh" value="10">"#))
            // Off, or anything but 1 to 3,600 seconds: no reload.
            for off in ["off", "0", "-1", "abc", "3601", ""] {
                let page = try await client.send(.get, "/?refresh=\(off)").text
                #expect(!page.contains("http-equiv"), "refresh=\(off)")
                #expect(page.contains(#"<option value="off" selected>off</option>"#))
            }
            // An interval the menu does not offer is shown as chosen.
            #expect(try await client.send(.get, "/?refresh=7").text.contains(#"<option value="7" selected>7 s</option>"#))
            #expect(try await client.send(.get, "/?refresh=7", json: true).status == .ok)
        }
    }

    @Test func anActionsRedirectKeepsTheRefreshInterval() async throws {
        try await ConsoleFixture.with { fixture, client in
            let dead = try await fixture.enqueue("/missing", name: "orders")
            try await fixture.drain()
            // The page's forms carry the interval in their action; the redirect keeps it.
            let entry = try await client.send(.get, "/entries/\(dead)?refresh=5").text
            #expect(entry.contains(#"<form method="post" action="/entries/\#(dead)/retry?refresh=5">"#))
            let retried = try await client.send(.post, "/entries/\(dead)/retry?refresh=5")
            #expect(retried.status == .seeOther)
            #expect(retried.headers[.location]?.hasPrefix("/entries/\(dead)?notice=retried") == true)
            #expect(retried.headers[.location]?.hasSuffix("&refresh=5") == true, "\(retried.headers[.location] ?? "")")
            let overview = try await client.send(.get, "/?refresh=10").text
            #expect(overview.contains(#"<form method="post" action="/pause?refresh=10"><button>Pause the queue</button></form>"#))
            let paused = try await client.send(.post, "/pause?refresh=10", form: "")
            #expect(unsigned(paused.headers[.location]) == "/?notice=paused%20the%20queue&refresh=10")
            // Without an interval, none is added.
            let resumed = try await client.send(.post, "/resume", form: "")
            #expect(unsigned(resumed.headers[.location]) == "/?notice=resumed%20the%20queue")
            // A bulk action on a filter: the confirmation's form, then the list it redirects to.
            try await fixture.drain()
            let entries = try await client.send(.get, "/entries?name=orders&refresh=30").text
            #expect(entries.contains(#"<form method="post" action="/bulk/discard-matching?refresh=30">"#))
            #expect(entries.contains(#"formaction="/bulk/discard?refresh=30""#))
            let confirm = try await client.send(.post, "/bulk/discard-matching?refresh=30", form: "name=orders").text
            #expect(confirm.contains(#"action="/bulk/discard-matching/confirm?refresh=30""#))
            #expect(!confirm.contains("http-equiv"), "a confirmation never reloads itself")
            let done = try await client.send(.post, "/bulk/discard-matching/confirm?refresh=30", form: "name=orders&through=\(dead)")
            #expect(unsigned(done.headers[.location]) == "/entries?name=orders&notice=discarded%201%20matching%20entries&refresh=30")
        }
    }

    /// Password checks are held at a gate on NIO's pool, as long hashes would hold it, as many
    /// as the cooperative pool has threads (System.coreCount each): had they run on that pool,
    /// nothing else could run until the gate opened. A watchdog opens it after 300 s (the hang
    /// guard of the other suites), so such a regression fails instead of hanging.
    @Test("passwords are hashed off the cooperative pool, a limited number at once: while they hash, a token is served and one more password gets 429")
    func passwordHashesLeaveThePoolFree() async throws {
        let fixture = try ConsoleFixture()
        var console = fixture.console
        let threads = System.coreCount
        let gate = DispatchSemaphore(value: 0)
        let entered = LockedBox(0)
        let watchdog = LockedBox(false)
        console.passwordChecks = PasswordChecks(limit: threads) {
            entered.withLock { $0 += 1 }
            // A blocking wait on purpose: this runs on a thread of NIO's pool, where the hash
            // would run; only a regression that moved checks onto the cooperative pool blocks it.
            gate.wait()
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(300)) {
            watchdog.withLock { $0 = true }
            for _ in 0..<threads { gate.signal() }
        }
        do {
            try await Application(router: console.router()).test(.router) { (client: any TestClientProtocol) async throws in
                let signIns = (0..<threads).map { index in
                    Task { try await client.send(.get, "/", as: Auth.basic("admin", "wrong \(index)")) }
                }
                while entered.withLock({ $0 }) < threads && !watchdog.withLock({ $0 }) {
                    try await Task.sleep(for: .milliseconds(10))
                }
                // Every check held: one more is refused at once, not queued behind them.
                let extra = try await client.send(.get, "/", as: Auth.basic("admin", "wrong again"))
                #expect(extra.status == .tooManyRequests && extra.headers[.retryAfter] == "1")
                // A token needs no hash: served while the checks are held.
                #expect(try await client.send(.get, "/", as: Auth.bearer).status == .ok)
                #expect(!watchdog.withLock { $0 }, "the checks held the cooperative pool: nothing ran until the watchdog opened the gate")
                for _ in 0..<threads { gate.signal() }
                for signIn in signIns { #expect(try await signIn.value.status == .unauthorized) }
                // The right password, checked through the same gate (open now), signs in.
                gate.signal()
                #expect(try await client.send(.get, "/", as: Auth.admin).status == .ok)
            }
        } catch {
            await fixture.close()
            throw error
        }
        await fixture.close()
    }

    @Test func aVerifiedPasswordIsTakenWithoutHashingAgainUntilItExpires() {
        let now = LockedBox(100.0)
        let cache = VerifiedCredentials(timeToLive: .seconds(60), capacity: 2, clock: { now.withLock { $0 } })
        let hashes = LockedBox(0)
        let admin = ConsoleUser(name: "admin", role: .admin)
        func signIn(_ name: String, _ password: String) -> ConsoleUser? {
            cache.user(name: name, password: password) {
                hashes.withLock { $0 += 1 }
                return password == "secret" ? ConsoleUser(name: name, role: .admin) : nil
            }
        }
        #expect(signIn("admin", "secret") == admin)
        #expect(signIn("admin", "secret") == admin)
        #expect(hashes.withLock { $0 } == 1, "the second request took the verified password")
        #expect(signIn("admin", "wrong") == nil)
        #expect(signIn("admin", "wrong") == nil)
        #expect(hashes.withLock { $0 } == 3, "a wrong password is hashed every time")
        #expect(signIn("admin", "secret") == admin && hashes.withLock { $0 } == 3, "and does not evict the right one")
        now.withLock { $0 += 61 }
        #expect(signIn("admin", "secret") == admin && hashes.withLock { $0 } == 4, "expired: hashed again")
        // At most two names: a third evicts the one closest to expiring.
        now.withLock { $0 += 1 }
        #expect(signIn("b", "secret") != nil)
        now.withLock { $0 += 1 }
        #expect(signIn("c", "secret") != nil)
        #expect(cache.count == 2 && hashes.withLock { $0 } == 6)
        #expect(signIn("c", "secret") != nil && hashes.withLock { $0 } == 6)
        #expect(signIn("admin", "secret") != nil && hashes.withLock { $0 } == 7, "admin was evicted")
    }

    @Test func pollingAsTheSameUserSignsInEveryTime() async throws {
        try await ConsoleFixture.with { _, client in
            for _ in 0..<5 {
                let polled = try await client.send(.get, "/?refresh=1")
                #expect(polled.status == .ok)
            }
            let wrong = try await client.send(.get, "/", as: Auth.basic("admin", "wrong"))
            #expect(wrong.status == .unauthorized)
            let right = try await client.send(.get, "/", as: Auth.basic("admin", "secret"))
            #expect(right.status == .ok)
            let viewer = try await client.send(.post, "/pause", as: Auth.viewer)
            #expect(viewer.status == .forbidden)
        }
    }
}
