import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// FIFO per group, groups in parallel up to the limit, priority across groups.
@Suite("Ordering: groups, concurrency and priority")
struct OrderingTests {
    /// A route that records the order of arrivals and how many requests were in flight at once,
    /// per group (the `g` query item) and overall.
    final class Recorder: Sendable {
        struct State {
            var arrivals: [String] = []
            var active: [String: Int] = [:]
            var activeTotal = 0
            var maxTotal = 0
            var maxPerGroup = 0
        }

        let state = LockedBox(State())

        /// `gate`: each request waits until that many were in flight at once (a hang guard
        /// bounds it), so that a test of concurrency does not depend on how fast a loaded
        /// machine starts the sends of one batch.
        func install(on server: TestHTTPServer, path: String, hold: Duration, failFirst: Set<String> = [], gate: Int? = nil) {
            let failed = LockedBox(Set<String>())
            server.route(path) { [state] request, writer in
                let group = request.queryValue("g") ?? "-"
                let name = request.queryValue("n") ?? "?"
                state.withLock { state in
                    state.arrivals.append(name)
                    state.active[group, default: 0] += 1
                    state.activeTotal += 1
                    state.maxTotal = max(state.maxTotal, state.activeTotal)
                    state.maxPerGroup = max(state.maxPerGroup, state.active[group] ?? 0)
                }
                if let gate { _ = await eventually { state.current.maxTotal >= gate } }
                try await Task.sleep(for: hold)
                state.withLock { state in
                    state.active[group, default: 1] -= 1
                    state.activeTotal -= 1
                }
                let fail = failFirst.contains(name) && failed.withLock { $0.insert(name).inserted }
                try await writer.respond(status: fail ? 503 : 200)
            }
        }
    }

    @Test("within a group, an entry waits until the one before it is delivered, even across a retry", arguments: StoreKind.allCases)
    func fifoWithinGroup(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let recorder = Recorder()
            recorder.install(on: server, path: "/ordered", hold: .milliseconds(5), failFirst: ["a1"])
            let clock = ManualQueueClock()   // the retry's backoff passes without waiting for it
            let queue = try await makeQueue(on: store, server: server, concurrency: 8) { $0.clock = clock.queueClock }
            for index in 1...5 {
                _ = try await queue.enqueue(method: "POST", url: server.url("/ordered?g=a&n=a\(index)").absoluteString, options: EnqueueOptions(group: "a"))
            }
            try await drainUntilSettled(queue, advancing: clock)
            let state = recorder.state.current
            #expect(state.arrivals == ["a1", "a1", "a2", "a3", "a4", "a5"])
            #expect(state.maxPerGroup == 1)
            await server.shutdown()
        }
    }

    @Test("groups are drained in parallel up to the concurrency limit, one entry per group at a time", arguments: StoreKind.allCases)
    func groupsInParallel(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let recorder = Recorder()
            recorder.install(on: server, path: "/parallel", hold: .milliseconds(20), gate: 3)
            let queue = try await makeQueue(on: store, server: server, concurrency: 3)
            var requests: [QueuedRequest] = []
            for group in ["a", "b", "c", "d", "e"] {
                for index in 1...3 {
                    requests.append(QueuedRequest(method: "POST", url: server.url("/parallel?g=\(group)&n=\(group)\(index)").absoluteString, options: EnqueueOptions(group: group)))
                }
            }
            _ = try await queue.enqueue(requests)
            let summary = try await drainUntilSettled(queue)
            #expect(summary.delivered == 15)
            let state = recorder.state.current
            #expect(state.maxTotal == 3, "three at once, never more")
            #expect(state.maxPerGroup == 1, "never two of one group at once")
            for group in ["a", "b", "c", "d", "e"] {
                #expect(state.arrivals.filter { $0.hasPrefix(group) } == (1...3).map { "\(group)\($0)" })
            }
            await server.shutdown()
        }
    }

    @Test("higher priority goes first; equal priority goes oldest first", arguments: StoreKind.allCases)
    func priority(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            let recorder = Recorder()
            recorder.install(on: server, path: "/prio", hold: .zero)
            let queue = try await makeQueue(on: store, server: server, concurrency: 1)
            for (name, priority) in [("low1", 0), ("high1", 5), ("low2", 0), ("urgent", 9), ("high2", 5)] {
                _ = try await queue.enqueue(method: "POST", url: server.url("/prio?n=\(name)").absoluteString, options: EnqueueOptions(priority: priority))
            }
            try await drainUntilSettled(queue)
            #expect(recorder.state.current.arrivals == ["urgent", "high1", "high2", "low1", "low2"])
            await server.shutdown()
        }
    }

    @Test("a drain with .once tries each due entry at most once", arguments: StoreKind.allCases)
    func once(_ kind: StoreKind) async throws {
        let store = try TestStore(kind)
        try await removing(store) {
            let server = try await TestHTTPServer.start()
            scriptFailures(server, "/once", Array(repeating: (500, []), count: 10))
            let queue = try await makeQueue(on: store, server: server, policy: DeliveryPolicy(backoff: Backoff(base: .zero, cap: .zero)))
            _ = try await queue.enqueue(method: "POST", url: server.url("/once").absoluteString)
            let summary = try await queue.drain(.once)
            #expect(summary.failed == 1)
            #expect(idempotencyKeys(server).count == 1)
            await server.shutdown()
        }
    }
}
