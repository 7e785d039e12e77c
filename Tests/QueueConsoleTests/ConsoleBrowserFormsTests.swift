import Foundation
import HTTPTypes
import HummingbirdTesting
import OfflineQueue
import QueueConsole
import Testing

/// What the browser tests (Tests/SyncTests/Browser) found, kept here too, where no browser is
/// needed: a retried entry is no longer dead.
@Suite("QueueConsole pages as a browser asks for them")
struct ConsoleBrowserFormsTests {
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
