import Foundation
import HTTPTypes
import HummingbirdTesting
import OfflineQueue
import QueueConsole
import Testing

@Suite("QueueConsole actions")
struct ConsoleActionsTests {
    @Test func retryNowAppliesToDeadAndPendingOnly() async throws {
        try await ConsoleFixture.with { fixture, client in
            let dead = try await fixture.enqueue("/missing")
            let delivered = try await fixture.enqueue("/ok")
            try await fixture.drain()
            // A browser's form: 303 back to the entry, with the result as a notice.
            let response = try await client.send(.post, "/entries/\(dead)/retry", form: "")
            #expect(response.status == .seeOther)
            #expect(response.headers[.location]?.hasPrefix("/entries/\(dead)?notice=retried") == true)
            #expect(try await fixture.queue.entry(dead)?.state == .pending)
            let refused = try await client.send(.post, "/entries/\(delivered)/retry", json: true)
            #expect(refused.status == .conflict)
            #expect(try refused.decode(ActionJSON.self).skipped == [delivered])
            #expect(try await fixture.queue.entry(delivered)?.state == .delivered)
        }
    }

    @Test func discardAppliesToAllButInFlight() async throws {
        try await ConsoleFixture.with { fixture, client in
            let dead = try await fixture.enqueue("/missing")
            try await fixture.drain()
            let pending = try await fixture.enqueue()
            for id in [dead, pending] {
                let result = try await client.send(.post, "/entries/\(id)/discard", json: true).decode(ActionJSON.self)
                #expect(result.changed == [id])
                #expect(try await fixture.queue.entry(id) == nil)
            }
            #expect(ConsoleAction.discard.applies(to: .inflight) == false)
            #expect(ConsoleAction.retry.applies(to: .delivered) == false && ConsoleAction.retry.applies(to: .inflight) == false)
        }
    }

    @Test func purgeDelivered() async throws {
        try await ConsoleFixture.with { fixture, client in
            try await fixture.enqueue("/ok")
            try await fixture.enqueue("/missing")
            try await fixture.drain()
            let pending = try await fixture.enqueue()
            let response = try await client.send(.post, "/purge-delivered", form: "")
            #expect(response.status == .seeOther && response.headers[.location]?.hasPrefix("/?notice=purged%201%20delivered") == true)
            let counts = try await fixture.queue.counts()
            #expect(counts.delivered == 0 && counts.dead == 1 && counts.pending == 1)
            #expect(try await fixture.queue.entry(pending) != nil)
        }
    }

    @Test func pauseAndResumeTheQueueAndAGroup() async throws {
        try await ConsoleFixture.with { fixture, client in
            #expect(try await client.send(.post, "/pause", form: "").status == .seeOther)
            #expect(try await client.send(.post, "/pause", form: "group=g%26h").status == .seeOther)
            var status = try await fixture.queue.pauses()
            #expect(status.queuePaused && status.pausedGroups == ["g&h"])
            let overview = try await client.send(.get, "/", json: true).decode(OverviewJSON.self)
            #expect(overview.queuePaused && overview.pausedGroups.map(\.name) == ["g&h"])
            let html = try await client.send(.get, "/").text
            #expect(html.contains(#"<a href="/entries?group=g%26h">g&amp;h</a>"#))
            #expect(html.contains(#"<form method="post" action="/resume"><button>Resume the queue</button>"#))
            _ = try await client.send(.post, "/resume", form: "group=g%26h")
            _ = try await client.send(.post, "/resume", form: "")
            status = try await fixture.queue.pauses()
            #expect(status.pauses.isEmpty)
        }
    }

    @Test func bulkRetryAndDiscardOfSelectedIDs() async throws {
        try await ConsoleFixture.with { fixture, client in
            let dead1 = try await fixture.enqueue("/missing")
            let dead2 = try await fixture.enqueue("/missing")
            let delivered = try await fixture.enqueue("/ok")
            try await fixture.drain()
            let retried = try await client.send(.post, "/bulk/retry", json: true, form: "id=\(dead1)&id=\(dead2)&id=\(delivered)").decode(ActionJSON.self)
            #expect(retried.changed == [dead1, dead2] && retried.skipped == [delivered])
            #expect(try await fixture.queue.entry(dead1)?.state == .pending)
            let discarded = try await client.send(.post, "/bulk/discard", form: "id=\(dead1)&id=\(delivered)")
            #expect(discarded.status == .seeOther)
            #expect(try await fixture.queue.entry(dead1) == nil)
            #expect(try await fixture.queue.entry(delivered) == nil)
            #expect(try await fixture.queue.entry(dead2) != nil)
            // More than 1,000 ids, or none, changes nothing.
            let many = (1...1_001).map { "id=\($0)" }.joined(separator: "&")
            #expect(try await client.send(.post, "/bulk/discard", form: many).status == .contentTooLarge)
            #expect(try await client.send(.post, "/bulk/discard", form: "").status == .badRequest)
            #expect(try await fixture.queue.entry(dead2) != nil)
        }
    }
}
