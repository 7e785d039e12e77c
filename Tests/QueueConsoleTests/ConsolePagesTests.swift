import Foundation
import HTTPCore
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import OfflineQueue
import QueueConsole
import Testing

@Suite("QueueConsole pages")
struct ConsolePagesTests {
    @Test func overviewCountsByStateInHTMLAndJSON() async throws {
        try await ConsoleFixture.with { fixture, client in
            try await fixture.enqueue("/ok")
            try await fixture.enqueue("/missing")
            try await fixture.drain()
            try await fixture.enqueue("/ok")
            let json = try await client.send(.get, "/", json: true)
            #expect(json.status == .ok)
            #expect(json.headers[.contentType] == "application/json")
            let overview = try json.decode(OverviewJSON.self)
            #expect(overview.counts.pending == 1 && overview.counts.delivered == 1 && overview.counts.dead == 1 && overview.counts.total == 3)
            #expect(!overview.queuePaused)
            let html = try await client.send(.get, "/")
            #expect(html.status == .ok)
            #expect(html.headers[.contentType] == "text/html; charset=utf-8")
            #expect(html.text.contains(#"<a href="/entries?state=dead">1</a>"#))
            #expect(html.text.contains(#"<link rel="stylesheet" href="/console.css">"#))
        }
    }

    @Test func overviewByGroupAndNameWithPausesAndRecentDeliveries() async throws {
        // The queue's clock stands still: "the last minute" is the same minute for every read,
        // however long a loaded machine takes between them.
        try await ConsoleFixture.with(clock: ManualQueueClock()) { fixture, client in
            try await fixture.enqueue("/ok", name: "orders", group: "g1")
            try await fixture.enqueue("/missing", name: "orders", group: "g2")
            try await fixture.enqueue("/ok", name: "users")
            try await fixture.drain()
            try await fixture.enqueue("/ok", name: "orders", group: "g1")
            try await fixture.enqueue("/ok", name: "<b>odd</b>", group: "g&2")
            _ = try await fixture.queue.pause(group: "g1")
            let overview = try await client.send(.get, "/", json: true).decode(OverviewJSON.self)
            #expect(overview.deliveredLastMinute == 2 && overview.deliveredLastFiveMinutes == 2)
            #expect(overview.counts.waitingForNetwork == 0 && overview.tallied == 5 && overview.talliedAll)
            let g1 = try #require(overview.groups.first)
            #expect(g1.label == "g1" && g1.pending == 1 && g1.delivered == 1 && g1.total == 2 && g1.paused && g1.query == "group=g1")
            #expect(overview.groups.map(\.label) == ["g1", "(none)", "g&2", "g2"], "by total, then the entries without a group, then by name")
            #expect(overview.groups.filter(\.paused).map(\.label) == ["g1"])
            #expect(overview.groups[1].query.isEmpty, "no filter selects the entries without a group")
            #expect(overview.names.map(\.label) == ["orders", "<b>odd</b>", "users"])
            #expect(overview.names[0].pending == 1 && overview.names[0].delivered == 1 && overview.names[0].dead == 1)
            let html = try await client.send(.get, "/").text
            #expect(html.contains(#"<a href="/entries?group=g1">g1</a> <span class="paused">paused</span>"#))
            #expect(html.contains(#"<a href="/entries?name=%3Cb%3Eodd%3C%2Fb%3E">&lt;b&gt;odd&lt;/b&gt;</a>"#))
            #expect(html.contains(#"<input type="hidden" name="group" value="g1"><button>Resume</button>"#))
            #expect(html.contains(#"<input type="hidden" name="group" value="g&amp;2"><button>Pause</button>"#))
            #expect(html.contains("Delivered in the last minute: 2"))
            // Beyond the largest: one line sums the rest; a small window counts the newest only.
            let console = QueueConsole(queue: fixture.queue, users: fixture.console.users, countsMaxAge: .zero, overviewTop: 1, overviewWindow: 2)
            try await Application(router: console.router()).test(.router) { small in
                let capped = try await small.send(.get, "/", json: true).decode(OverviewJSON.self)
                #expect(capped.tallied == 2 && !capped.talliedAll)
                #expect(capped.groups.map(\.label) == ["g&2", "1 others"] && capped.groups[1].pending == 1 && capped.groups[1].query.isEmpty)
                #expect(try await small.send(.get, "/").text.contains("Groups and names count the newest 2 entries."))
            }
        }
    }

    @Test func overviewCountsAreSharedWithinTheirMaxAge() async throws {
        let fixture = try ConsoleFixture()
        let console = QueueConsole(queue: fixture.queue, users: fixture.console.users, countsMaxAge: .seconds(60))
        try await Application(router: console.router()).test(.router) { client in
            let first = try await client.send(.get, "/", json: true).decode(OverviewJSON.self)
            try await fixture.enqueue()
            let second = try await client.send(.get, "/", json: true).decode(OverviewJSON.self)
            // The second viewer within a minute got the first count, not a query of its own.
            #expect(first.counts.pending == 0 && second.counts.pending == 0)
        }
        await fixture.close()
    }

    @Test func entriesFilterByStateGroupNameOriginAndID() async throws {
        try await ConsoleFixture.with { fixture, client in
            let a = try await fixture.enqueue(name: "orders", group: "g1")
            let b = try await fixture.enqueue(url: "https://other.example.com/ok", name: "users", group: "g2")
            let c = try await fixture.enqueue("/missing", name: "orders")
            try await fixture.drain()
            func ids(_ query: String) async throws -> [Int64] {
                try await client.send(.get, "/entries" + query, json: true).decode(EntriesJSON.self).entries.map(\.id)
            }
            #expect(try await ids("") == [a, b, c])
            #expect(try await ids("?state=dead") == [c])
            #expect(try await ids("?state=delivered") == [a, b])
            #expect(try await ids("?group=g2") == [b])
            #expect(try await ids("?name=orders") == [a, c])
            #expect(try await ids("?origin=https%3A%2F%2Fother.example.com") == [b])
            #expect(try await ids("?origin=https%3A%2F%2Fother.example") == [])
            #expect(try await ids("?id=\(c)") == [c])
            #expect(try await ids("?id=\(c)&state=delivered") == [])
            #expect(try await ids("?id=999") == [])
            let html = try await client.send(.get, "/entries?state=dead").text
            #expect(html.contains(#"<option selected>dead</option>"#))
            #expect(html.contains(#"<a href="/entries/\#(c)">\#(c)</a>"#))
        }
    }

    @Test func entriesPageByKeysetAtMost500() async throws {
        try await ConsoleFixture.with { fixture, client in
            var all: [Int64] = []
            for _ in 0..<7 { all.append(try await fixture.enqueue()) }
            let first = try await client.send(.get, "/entries?limit=3", json: true).decode(EntriesJSON.self)
            #expect(first.entries.map(\.id) == Array(all[0..<3]))
            #expect(first.next == all[2])
            let second = try await client.send(.get, "/entries?limit=3&after=\(all[2])", json: true).decode(EntriesJSON.self)
            #expect(second.entries.map(\.id) == Array(all[3..<6]))
            let last = try await client.send(.get, "/entries?limit=3&after=\(all[5])", json: true).decode(EntriesJSON.self)
            #expect(last.entries.map(\.id) == [all[6]] && last.next == nil)
            let html = try await client.send(.get, "/entries?limit=3&state=pending").text
            #expect(html.contains(#"<a rel="next" href="/entries?state=pending&amp;after=\#(all[2])&amp;limit=3">"#))
            // A limit above 500 is cut to 500.
            for _ in 0..<500 { try await fixture.enqueue() }
            let big = try await client.send(.get, "/entries?limit=100000", json: true).decode(EntriesJSON.self)
            #expect(big.entries.count == 500 && big.next != nil)
        }
    }

    @Test func entryDetailRedactsCredentialsAndHidesTheBody() async throws {
        try await ConsoleFixture.with { fixture, client in
            let id = try await fixture.queue.enqueue(
                method: "POST", url: "https://api.example.com/missing",
                headers: [("Authorization", "Bearer very-secret"), ("X-API-Key", "k-123"), ("X-Trace", "visible")],
                body: .data(Data("body-secret".utf8)), name: "orders"
            ).id
            try await fixture.drain()
            let response = try await client.send(.get, "/entries/\(id)", json: true)
            #expect(response.status == .ok)
            let entry = try response.decode(EntryJSON.self)
            #expect(entry.state == "dead" && entry.deadReason == "rejected" && entry.lastStatus == "400" && entry.attempts == 1)
            #expect(entry.hasBody && entry.bodySize == 11)
            #expect(entry.headers.first { $0.name == "Authorization" }.map { $0.redacted && $0.value.isEmpty } == true)
            #expect(entry.headers.first { $0.name == "X-API-Key" }?.redacted == true)
            #expect(entry.headers.first { $0.name == "X-Trace" }?.value == "visible")
            let html = try await client.send(.get, "/entries/\(id)").text
            for secret in ["very-secret", "k-123", "body-secret"] { #expect(!html.contains(secret)) }
            #expect(html.contains("11 bytes, hidden"))
            #expect(try await client.send(.get, "/entries/424242").status == .notFound)
            #expect(try await client.send(.get, "/entries/nope").status == .badRequest)
        }
    }

    @Test func entryDetailShowsTheKeptResponseEscaped() async throws {
        try await ConsoleFixture.with { fixture, client in
            let id = try await fixture.queue.enqueue([QueuedRequest(
                method: "POST", url: "https://api.example.com/created", options: EnqueueOptions(keepResponse: ResponseKeeping())
            )])[0].id
            try await fixture.drain()
            let entry = try await client.send(.get, "/entries/\(id)", json: true).decode(EntryJSON.self)
            #expect(entry.state == "delivered" && entry.hasResponse && entry.responseStatus == 201)
            #expect(entry.responseHeaders.map(\.name) == ["location", "etag"])
            #expect(entry.responseBody == #"{"note":"<script>alert(3)</script>"}"#)
            let html = try await client.send(.get, "/entries/\(id)").text
            #expect(html.contains("Kept response") && html.contains("201, 36 bytes"))
            #expect(!html.contains("<script>alert(3)") && html.contains("&lt;script&gt;alert(3)&lt;/script&gt;"), "the body escaped")
            #expect(!html.contains("<b>7</b>") && html.contains("/notes/&lt;b&gt;7&lt;/b&gt;"), "a header value escaped")
            // An entry that keeps nothing shows none.
            let plain = try await fixture.queue.enqueue(method: "POST", url: "https://api.example.com/ok").id
            try await fixture.drain()
            #expect(try await client.send(.get, "/entries/\(plain)", json: true).decode(EntryJSON.self).hasResponse == false)
        }
    }

    @Test func entryDetailShowsItsTraceLinkedThroughTheTemplate() async throws {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
        try await ConsoleFixture.with { fixture, client in
            var request = QueuedRequest(method: "POST", url: "https://api.example.com/ok")
            request.traceContext = try TraceContext(traceparent: "00-\(trace)-00f067aa0ba902b7-01")
            let traced = try await fixture.queue.enqueue([request])[0].id
            let plain = try await fixture.enqueue()
            // Without --trace-link: the id, no link.
            #expect(try await client.send(.get, "/entries/\(traced)").text.contains("<dt>Trace</dt><dd>\(trace)</dd>"))
            #expect(try await client.send(.get, "/entries/\(traced)", json: true).decode(TraceJSON.self).traceID == trace)
            #expect(!(try await client.send(.get, "/entries/\(plain)").text.contains("<dt>Trace</dt>")), "an entry without context shows none")
            let linked = QueueConsole(queue: fixture.queue, users: fixture.console.users, countsMaxAge: .zero, traceLink: "https://jaeger.example.com/trace/{trace_id}")
            try await Application(router: linked.router()).test(.router) { client in
                let html = try await client.send(.get, "/entries/\(traced)").text
                #expect(html.contains(#"<a href="https://jaeger.example.com/trace/\#(trace)" rel="noopener noreferrer">\#(trace)</a>"#), "\(html)")
                #expect(!(try await client.send(.get, "/entries/\(plain)").text.contains("jaeger.example.com")))
            }
        }
    }

    struct TraceJSON: Decodable { var traceID: String }

    @Test func healthzAndStylesheetAreOpen() async throws {
        try await ConsoleFixture.with { _, client in
            let health = try await client.send(.get, "/healthz", as: nil)
            #expect(health.status == .ok && health.text == "ok\n")
            #expect(try await client.send(.get, "/console.css", as: nil).status == .ok)
            #expect(try await client.send(.get, "/", as: nil).status == .unauthorized)
        }
    }
}
