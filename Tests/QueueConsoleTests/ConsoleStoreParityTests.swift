import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OfflineQueue
import QueueConsole
import Testing

/// The console's pages and actions on every store it serves: the same routes, the same answers
/// on SQLite and on PostgreSQL (the latter with `COURIER_TEST_POSTGRES_URL`, as `Tools/test` sets).
@Suite("QueueConsole on SQLite and PostgreSQL")
struct ConsoleStoreParityTests {
    @Test("overview: counts by state, group and name, pauses, recent deliveries", arguments: ConsoleStore.available)
    func overview(_ store: ConsoleStore) async throws {
        try await ConsoleFixture.with(store) { fixture, client in
            try await fixture.enqueue("/ok", name: "orders", group: "g1")
            try await fixture.enqueue("/missing", name: "orders", group: "g2")
            try await fixture.drain()
            try await fixture.enqueue("/ok", name: "users", group: "g1")
            _ = try await fixture.queue.pause(group: "g1")
            let overview = try await client.send(.get, "/", json: true).decode(OverviewJSON.self)
            #expect(overview.counts.pending == 1 && overview.counts.delivered == 1 && overview.counts.dead == 1 && overview.counts.total == 3)
            #expect(overview.pausedGroups.map(\.name) == ["g1"] && !overview.queuePaused)
            #expect(overview.groups.map(\.label) == ["g1", "g2"] && overview.groups[0].paused && overview.groups[0].pending == 1)
            #expect(overview.names.map(\.label) == ["orders", "users"] && overview.names[0].dead == 1)
            #expect(overview.deliveredLastMinute == 1 && overview.talliedAll)
            #expect(try await client.send(.get, "/?refresh=5").text.contains(#"<meta http-equiv="refresh" content="5">"#))
        }
    }

    @Test("entries: filters by state, group, name and origin, keyset pages, an entry's detail", arguments: ConsoleStore.available)
    func entries(_ store: ConsoleStore) async throws {
        try await ConsoleFixture.with(store) { fixture, client in
            let a = try await fixture.enqueue(name: "orders", group: "g1")
            let b = try await fixture.enqueue(url: "https://other.example.com/ok", name: "users", group: "g2")
            let c = try await fixture.enqueue("/missing", name: "orders", headers: [("Authorization", "Bearer secret-token")])
            try await fixture.drain()
            func ids(_ query: String) async throws -> [Int64] {
                let response = try await client.send(.get, "/entries" + query, json: true)
                #expect(response.status == .ok, "\(query): \(response.text)")
                return try response.decode(EntriesJSON.self).entries.map(\.id)
            }
            #expect(try await ids("") == [a, b, c])
            #expect(try await ids("?state=dead") == [c])
            #expect(try await ids("?group=g2") == [b])
            #expect(try await ids("?name=orders") == [a, c])
            #expect(try await ids("?origin=https%3A%2F%2Fother.example.com") == [b])
            #expect(try await ids("?origin=https%3A%2F%2Fother.example") == [])
            let first = try await client.send(.get, "/entries?limit=2", json: true).decode(EntriesJSON.self)
            #expect(first.entries.map(\.id) == [a, b] && first.next == b)
            let detail = try await client.send(.get, "/entries/\(c)", json: true).decode(EntryJSON.self)
            #expect(detail.state == "dead" && detail.lastStatus == "400")
            #expect(detail.headers.first { $0.name == "Authorization" }.map { $0.redacted && $0.value.isEmpty } == true)
        }
    }

    @Test("an entry that waits for another: blocked in the overview and the entries, linked both ways on its page", arguments: ConsoleStore.available)
    func dependencies(_ store: ConsoleStore) async throws {
        try await ConsoleFixture.with(store) { fixture, client in
            let parent = try await fixture.enqueue("/missing", name: "orders")
            let child = try await fixture.queue.enqueue([QueuedRequest(
                method: "POST", url: "https://api.example.com/ok", options: EnqueueOptions(after: [parent], whenParentDies: .wait)
            )])[0].id
            let overview = try await client.send(.get, "/", json: true).decode(OverviewJSON.self)
            #expect(overview.counts.blocked == 1 && overview.counts.pending == 1 && overview.counts.total == 2)
            #expect(try await client.send(.get, "/entries?state=blocked", json: true).decode(EntriesJSON.self).entries.map(\.id) == [child])
            let page = try await client.send(.get, "/entries/\(child)", json: true).decode(EntryJSON.self)
            #expect(page.state == "blocked" && page.parents == [parent] && page.whenParentDies == "wait")
            #expect(try await client.send(.get, "/entries/\(parent)", json: true).decode(EntryJSON.self).children == [child])
            let html = try await client.send(.get, "/entries/\(child)").text
            #expect(html.contains(#"<a href="/entries/\#(parent)">entry \#(parent)</a>"#) || html.contains("entry \(parent)</a>"))
            // The parent dies: the child waits for its retry.
            try await fixture.drain()
            #expect(try await fixture.queue.entry(child)?.state == .blocked)
        }
    }

    @Test("actions: retry, discard, bulk by id, bulk by filter after its confirmation, pause and resume", arguments: ConsoleStore.available)
    func actions(_ store: ConsoleStore) async throws {
        try await ConsoleFixture.with(store) { fixture, client in
            let dead = try await fixture.enqueue("/missing", name: "orders")
            let delivered = try await fixture.enqueue("/ok", name: "orders")
            let other = try await fixture.enqueue("/missing", name: "users")
            try await fixture.drain()
            let retried = try await client.send(.post, "/entries/\(dead)/retry", json: true).decode(ActionJSON.self)
            #expect(retried.changed == [dead])
            #expect(try await fixture.queue.entry(dead)?.state == .pending)
            let refused = try await client.send(.post, "/entries/\(delivered)/retry", json: true)
            #expect(refused.status == .conflict)
            let bulk = try await client.send(.post, "/bulk/retry", json: true, form: "id=\(other)&id=\(delivered)").decode(ActionJSON.self)
            #expect(bulk.changed == [other] && bulk.skipped == [delivered])
            let preview = try await client.send(.post, "/bulk/discard-matching", json: true, form: "name=orders").decode(ConfirmJSON.self)
            #expect(preview.count == 2 && preview.through == delivered)
            let done = try await client.send(.post, "/bulk/discard-matching/confirm", json: true, form: "name=orders&through=\(delivered)").decode(MatchingJSON.self)
            #expect(done.changed == 2)
            #expect(try await fixture.queue.entries().map(\.id) == [other])
            #expect(try await client.send(.post, "/pause", json: true, form: "group=g9").status == .ok)
            #expect(try await fixture.queue.pauses().pausedGroups == ["g9"])
            #expect(try await client.send(.post, "/resume", json: true, form: "group=g9").status == .ok)
            #expect(try await fixture.queue.pauses().pauses.isEmpty)
            let discarded = try await client.send(.post, "/entries/\(other)/discard", json: true).decode(ActionJSON.self)
            #expect(discarded.changed == [other])
            #expect(try await fixture.queue.counts().total == 0)
        }
    }
}
