import Foundation
import HTTPTypes
import HummingbirdTesting
import OfflineQueue
import QueueConsole
import Testing

/// What the browser tests (Tests/SyncTests/Browser) found, kept here too, where no browser is
/// needed: a GET form encodes a space as `+`, and a retried entry is no longer dead.
@Suite("QueueConsole pages as a browser asks for them")
struct ConsoleBrowserFormsTests {
    @Test("the filter form's query, spaces sent as +, matches names and groups with spaces")
    func plusIsASpaceInTheQuery() async throws {
        try await ConsoleFixture.with { fixture, client in
            let orders = try await fixture.enqueue(name: "POST /orders", group: "big orders")
            try await fixture.enqueue(name: "POST /files")
            let byName = try await client.send(.get, "/entries?state=&name=POST+%2Forders&group=", json: true).decode(EntriesJSON.self)
            #expect(byName.entries.map(\.id) == [orders])
            let byGroup = try await client.send(.get, "/entries?group=big+orders", json: true).decode(EntriesJSON.self)
            #expect(byGroup.entries.map(\.id) == [orders])
            let html = try await client.send(.get, "/entries?name=POST+%2Forders").text
            #expect(html.contains(#"<input name="name" value="POST /orders">"#))
            // A notice the console did not sign is not shown, however it is encoded.
            #expect(!(try await client.send(.get, "/?notice=paused+the+queue").text.contains(#"<p class="notice">"#)))
        }
    }

    @Test("a dead entry retried shows no dead reason any more")
    func retriedEntryHasNoDeadReason() async throws {
        try await ConsoleFixture.with { fixture, client in
            let id = try await fixture.enqueue("/missing")
            try await fixture.drain()
            #expect(try await client.send(.get, "/entries/\(id)", json: true).decode(EntryJSON.self).deadReason == "rejected")
            #expect(try await client.send(.post, "/entries/\(id)/retry", form: "").status == .seeOther)
            let entry = try await client.send(.get, "/entries/\(id)", json: true).decode(EntryJSON.self)
            #expect(entry.state == "pending" && entry.deadReason == "", "\(entry.state) (\(entry.deadReason))")
            let html = try await client.send(.get, "/entries/\(id)").text
            #expect(html.contains(#"<dd class="state-pending">pending</dd>"#))
        }
    }
}
