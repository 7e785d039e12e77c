import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// An operator's tools in the library: bulk retry and purge of a selection, and pauses that
/// every drainer of the file honours.
@Suite("Operations: bulk selections and pauses")
struct OperationsTests {
    /// Dead entries 1 (404, group a), 2 (410, group a), 3 (404, group b); 4 delivered; 5 pending
    /// (group b).
    func populated(_ queue: OfflineQueue, _ server: TestHTTPServer) async throws {
        _ = try await queue.enqueue(method: "POST", url: server.url("/status/404?n=1").absoluteString, options: EnqueueOptions(group: "a"))
        _ = try await queue.enqueue(method: "POST", url: server.url("/status/410?n=2").absoluteString, options: EnqueueOptions(group: "a"))
        _ = try await queue.enqueue(method: "POST", url: server.url("/status/404?n=3").absoluteString, options: EnqueueOptions(group: "b"))
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=4").absoluteString)
        let summary = try await queue.drain()
        #expect(summary.dead == 3 && summary.delivered == 1)
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=5").absoluteString, options: EnqueueOptions(group: "b"))
    }

    @Test("retry(matching:) by status, group and URL prefix; a dry run changes nothing", arguments: StoreKind.allCases)
    func bulkRetry(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            try await populated(queue, server)

            let preview = try await queue.retry(matching: EntrySelection(status: 404...404), dryRun: true)
            #expect(preview.dryRun && preview.ids == [1, 3])
            #expect(preview.entries.map(\.id) == [1, 3] && preview.entries.allSatisfy { $0.state == .dead })
            #expect(try await queue.counts().dead == 3, "a dry run changes nothing")

            let byGroup = try await queue.retry(matching: EntrySelection(group: "a", status: 400...499))
            #expect(byGroup.ids == [1, 2] && !byGroup.dryRun && byGroup.entries.isEmpty)
            #expect(try await queue.entry(1)?.state == .pending)
            #expect(try await queue.entry(3)?.state == .dead)

            // The default states are pending and dead: the delivered entry 4 is never matched.
            let byPrefix = try await queue.retry(matching: EntrySelection(urlPrefix: server.url("/echo").absoluteString))
            #expect(byPrefix.ids == [5])
            let none = try await queue.retry(matching: EntrySelection(states: [.delivered]))
            #expect(none.ids.isEmpty)
            #expect(try await queue.entry(4)?.state == .delivered)
            await server.shutdown()
        }
    }

    @Test("purge(matching:) by state and age on the queue's clock, with the body files", arguments: StoreKind.allCases)
    func bulkPurge(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let clock = ManualQueueClock()
            let queue = try await makeQueue(on: store, server: server) {
                $0.clock = clock.queueClock
                $0.inlineBodyLimit = 16
            }
            try await populated(queue, server)
            let big = try await queue.enqueue(method: "POST", url: server.url("/later").absoluteString, body: .data(Data(count: 1024)),
                                              options: EnqueueOptions(group: "c"))
            guard case .file(let bodyName, _) = try await queue.entry(big.id)?.body else { Issue.record("expected a body kept apart"); return }
            #expect(try await store.bodyExists(bodyName))

            #expect(try await queue.purge(matching: EntrySelection(states: [.dead], olderThan: .seconds(3600))).ids.isEmpty)
            clock.advance(by: .seconds(7200))
            let dryRun = try await queue.purge(matching: EntrySelection(states: [.dead], olderThan: .seconds(3600)), dryRun: true)
            #expect(dryRun.ids == [1, 2, 3])
            #expect(try await queue.counts().dead == 3)
            let dead = try await queue.purge(matching: EntrySelection(states: [.dead], olderThan: .seconds(3600)))
            #expect(dead.ids == [1, 2, 3])
            // No state: any state, pending included, and the pending entry's body file goes too.
            let groupC = try await queue.purge(matching: EntrySelection(group: "c"))
            #expect(groupC.ids == [big.id])
            #expect(try await !store.bodyExists(bodyName))
            let counts = try await queue.counts()
            #expect(counts.dead == 0 && counts.delivered == 1 && counts.pending == 1)
            await server.shutdown()
        }
    }

    @Test("an entry in flight under a live drainer is skipped by bulk retry and purge", arguments: StoreKind.allCases)
    func inFlightSkipped(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let release = LockedBox(false)
            let arrived = LockedBox(false)
            server.route("/hold") { _, writer in
                arrived.withLock { $0 = true }
                _ = await eventually { release.current }
                try await writer.respond(status: 200)
            }
            let queue = try await makeQueue(on: store, server: server)
            let held = try await queue.enqueue(method: "POST", url: server.url("/hold").absoluteString).id
            let drain = Task { try await queue.drain() }
            #expect(await eventually { arrived.current })
            let retried = try await queue.retry(matching: EntrySelection(states: [.pending, .inflight]))
            #expect(retried.ids.isEmpty && retried.skipped == [held])
            let purged = try await queue.purge(matching: EntrySelection())
            #expect(purged.ids.isEmpty && purged.skipped == [held])
            release.withLock { $0 = true }
            #expect(try await drain.value.delivered == 1)
            await server.shutdown()
        }
    }

    @Test("a paused queue or group is claimed by no drainer sharing the file, until resumed; the pause outlives the process", arguments: StoreKind.allCases)
    func pauses(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let queue = try await makeQueue(on: store, server: server)
            for (index, group) in ["a", "a", "b", nil].enumerated() {
                _ = try await queue.enqueue(method: "POST", url: server.url("/echo?n=\(index)").absoluteString, options: EnqueueOptions(group: group))
            }
            #expect(try await queue.pause())
            #expect(try await queue.pause() == false, "already paused")
            #expect(try await queue.pause(group: "a"))
            let status = try await queue.pauses()
            #expect(status.queuePaused && status.pausedGroups == ["a"] && status.pendingHeld == 4)
            #expect(status.pauses.first?.group == nil)

            // Another queue on the same file (another process would see the same rows).
            let other = try await makeQueue(on: store, server: server)
            let none = try await other.drain()
            #expect(none.delivered == 0 && none.remaining == 4 && none.paused == 4)
            #expect(none.nextAttemptAt == nil, "nothing a pause holds is due")
            #expect(server.requests.isEmpty)

            #expect(try await queue.resume())
            #expect(try await queue.resume() == false, "no longer paused")
            let reopened = try await makeQueue(on: store, server: server)
            #expect(try await reopened.pauses().pausedGroups == ["a"], "kept in the file")
            let some = try await reopened.drain()
            #expect(some.delivered == 2 && some.remaining == 2 && some.paused == 2)
            #expect(Set(server.requests.compactMap { $0.queryValue("n") }) == ["2", "3"])

            #expect(try await other.resume(group: "a"))
            let rest = try await other.drain()
            #expect(rest.delivered == 2 && rest.remaining == 0 && rest.paused == 0)
            #expect(try await queue.pauses() == PauseStatus())
            await server.shutdown()
        }
    }
}
