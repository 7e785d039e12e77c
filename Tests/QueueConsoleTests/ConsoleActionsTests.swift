import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
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

    @Test func bulkActionOnEveryMatchingEntryAfterAConfirmationWithItsCount() async throws {
        let fixture = try ConsoleFixture()
        let logs = InMemoryLogHandler()
        let console = QueueConsole(queue: fixture.queue, users: fixture.console.users, logger: Logger(label: "audit") { _ in logs })
        let deadOrders = [try await fixture.enqueue("/missing", name: "orders"), try await fixture.enqueue("/missing", name: "orders")]
        let deliveredOrder = try await fixture.enqueue("/ok", name: "orders")
        let deadUser = try await fixture.enqueue("/missing", name: "users")
        try await fixture.drain()
        try await Application(router: console.router()).test(.router) { client in
            // The first POST changes nothing: it shows the count and a form that confirms it.
            let page = try await client.send(.post, "/bulk/discard-matching", form: "state=&group=&name=orders&origin=")
            #expect(page.status == .ok)
            #expect(page.text.contains("Discard <strong>3</strong> entries"))
            #expect(page.text.contains("Filter: name orders."))
            #expect(page.text.contains(#"<form method="post" action="/bulk/discard-matching/confirm">"#))
            #expect(page.text.contains(#"<input type="hidden" name="through" value="\#(deliveredOrder)">"#))
            #expect(try await fixture.queue.counts().total == 4)
            let preview = try await client.send(.post, "/bulk/discard-matching", json: true, form: "name=orders").decode(ConfirmJSON.self)
            #expect(preview.count == 3 && preview.through == deliveredOrder && preview.confirm == "/bulk/discard-matching/confirm")
            // Retry applies to pending and dead entries: the delivered one is not counted.
            let retry = try await client.send(.post, "/bulk/retry-matching", json: true, form: "name=orders").decode(ConfirmJSON.self)
            #expect(retry.count == 2 && retry.through == deadOrders[1])
            let nothing = try await client.send(.post, "/bulk/retry-matching", json: true, form: "state=delivered")
            #expect(nothing.status == .conflict)
            #expect(try nothing.decode(ConfirmJSON.self).count == 0)
            // An entry enqueued after the count is left alone by the confirmed action.
            let later = try await fixture.enqueue("/missing", name: "orders")
            let done = try await client.send(.post, "/bulk/discard-matching/confirm", form: "state=&group=&name=orders&origin=&through=\(deliveredOrder)")
            #expect(done.status == .seeOther)
            #expect(unsigned(done.headers[.location]) == "/entries?name=orders&notice=discarded%203%20matching%20entries")
            #expect(try await fixture.queue.entries().map(\.id) == [deadUser, later])
            #expect(try await client.send(.post, "/bulk/discard-matching/confirm", form: "name=orders").status == .badRequest, "no through: not confirmed")
            #expect(try await client.send(.post, "/bulk/discard-matching", as: Auth.viewer, form: "name=orders").status == .forbidden)
        }
        let audit = logs.entries.filter { $0.message == "console action" }
        #expect(audit.count == 1)
        #expect(audit.first?.metadata["filter"] == "name=orders" && audit.first?.metadata["result"] == "discarded 3 matching entries")
        await fixture.close()
    }

    @Test func bulkActionOnAFilterGoesInBatches() async throws {
        try await ConsoleFixture.with { fixture, client in
            let ids = try await fixture.queue.enqueue((0..<(QueueConsole.bulkBatch * 2 + 1)).map { _ in
                QueuedRequest(method: "POST", url: "https://api.example.com/ok", name: "many")
            }).map(\.id)
            let preview = try await client.send(.post, "/bulk/discard-matching", json: true, form: "name=many").decode(ConfirmJSON.self)
            #expect(preview.count == ids.count)
            let done = try await client.send(.post, "/bulk/discard-matching/confirm", json: true, form: "name=many&through=\(ids.last!)")
            #expect(try done.decode(MatchingJSON.self).changed == ids.count)
            #expect(try await fixture.queue.counts().total == 0)
        }
    }

    @Test("blocked entries that wait for each other in a loop (stored by an earlier version): counted and named on the overview, released from an entry's page")
    func stuckLoopShownAndReleased() async throws {
        try await ConsoleFixture.with { fixture, client in
            let first = try await fixture.queue.enqueue(method: "POST", url: "https://api.example.com/ok").id
            let second = try await fixture.queue.enqueue(method: "POST", url: "https://api.example.com/ok", options: EnqueueOptions(after: [first])).id
            let database = try DatabaseQueue(path: fixture.folder.appendingPathComponent("queue.db").path)
            try await database.write { db in
                try db.execute(sql: "INSERT INTO entry_edge (child, parent, when_parent_dies, parent_delivered) VALUES (?, ?, 'die', 0)", arguments: [first, second])
                try db.execute(sql: "UPDATE entry SET state = 'blocked' WHERE id = ?", arguments: [first])
            }
            try database.close()
            let overview = try await client.send(.get, "/", json: true).decode(OverviewJSON.self)
            #expect(overview.counts.blocked == 2 && overview.counts.stuck == 2)
            let page = try await client.send(.get, "/")
            #expect(page.text.contains("2 blocked entries wait for each other in a loop: nothing will release them"))
            let entry = try await client.send(.get, "/entries/\(first)")
            #expect(entry.text.contains(#"action="/entries/\#(first)/release""#))
            let released = try await client.send(.post, "/entries/\(first)/release", json: true).decode(ActionJSON.self)
            #expect(released.changed == [first] && released.message == "released 1")
            #expect(try await fixture.queue.entry(first)?.state == .pending)
            #expect(try await client.send(.get, "/", json: true).decode(OverviewJSON.self).counts.stuck == 0)
            let again = try await client.send(.post, "/entries/\(first)/release", json: true)
            #expect(again.status == .conflict, "release applies to blocked entries only")
            try await fixture.drain()
            #expect(try await fixture.queue.counts().delivered == 2)
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

    @Test("an origin a 429 paused shows on the overview with its status, and a resume lifts it")
    func resumeAnOriginPausedByRetryAfter() async throws {
        try await ConsoleFixture.with { fixture, client in
            _ = try await fixture.enqueue(url: "https://busy.example.com/busy")
            _ = try await fixture.enqueue(url: "https://busy.example.com/busy")
            try await fixture.drain()
            let overview = try await client.send(.get, "/", json: true).decode(OriginsJSON.self)
            #expect(overview.hasOrigins && overview.origins.map(\.origin) == ["https://busy.example.com"])
            let origin = try #require(overview.origins.first)
            #expect(origin.paused && origin.pauseStatus == "429" && !origin.pausedUntil.isEmpty && origin.canResume)
            #expect(try await fixture.queue.counts().pending == 2, "the second entry was held, not sent")
            let html = try await client.send(.get, "/").text
            #expect(html.contains(#"<input type="hidden" name="origin" value="https://busy.example.com"><button>Resume</button>"#))
            #expect(try await client.send(.post, "/resume", form: "origin=https%3A%2F%2Fbusy.example.com").status == .seeOther)
            #expect(try await fixture.queue.originFlows().isEmpty)
            let again = try await client.send(.post, "/resume", json: true, form: "origin=https%3A%2F%2Fbusy.example.com").decode(ActionJSON.self)
            #expect(again.message == "origin https://busy.example.com was not paused or slowed")
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
