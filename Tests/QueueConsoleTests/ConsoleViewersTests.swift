import CourierTesting
import Foundation
import HTTPCore
import Hummingbird
import HummingbirdTesting
import MetricsTestKit
import OfflineQueue
import QueueConsole
import Testing

/// What open viewers cost the store, counted by the queue's `count_queries_total` (never timed).
@Suite("QueueConsole with many viewers")
struct ConsoleViewersTests {
    @Test("50 viewers polling the overview at once make one count query and one tally per interval")
    func fiftyViewersShareOneCountQueryPerInterval() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-console-viewers-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let metrics = TestMetrics()
        var configuration = QueueConfiguration(path: folder.appendingPathComponent("queue.db").path, durability: .normal)
        configuration.metrics.factory = metrics
        let queue = try OfflineQueue(configuration: configuration, client: APIClient(baseURL: URL(string: "https://api.example.com")!, transport: StubTransport()))
        for index in 0..<20 {
            _ = try await queue.enqueue(method: "POST", url: "https://api.example.com/orders/\(index)", name: "POST /orders", options: EnqueueOptions(group: "g\(index % 3)"))
        }
        let users = try ConsoleUsers(parsing: ConsoleFixture.users)
        func queries(_ query: String) -> Int64 {
            (try? metrics.expectCounter("courier_queue_count_queries_total", [("query", query)]).totalValue) ?? 0
        }

        // An interval longer than the test: every poll of 50 viewers, 5 polls each, falls in the first.
        let shared = QueueConsole(queue: queue, users: users, countsMaxAge: .seconds(3600))
        try await Application(router: shared.router()).test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { viewers in
                for _ in 0..<50 {
                    viewers.addTask {
                        for _ in 0..<5 {
                            let response = try await client.send(.get, "/", as: Auth.bearer, json: true)
                            #expect(response.status == .ok)
                        }
                    }
                }
                try await viewers.waitForAll()
            }
        }
        #expect(queries("counts") == 1, "250 polls in one interval: one count query")
        #expect(queries("tally") == 1, "and one tally by group and name")

        // Without an interval each poll reads: the counter sees every query it saves above.
        let unshared = QueueConsole(queue: queue, users: users, countsMaxAge: .zero)
        try await Application(router: unshared.router()).test(.router) { client in
            for _ in 0..<10 {
                let response = try await client.send(.get, "/", as: Auth.bearer)
                #expect(response.status == .ok)
            }
        }
        #expect(queries("counts") == 11)
        #expect(queries("tally") == 11)

        // An action forgets what was shared: the page it redirects to shows what it did, within
        // the same interval, and the viewers after it share the new read.
        try await Application(router: shared.router()).test(.router) { client in
            func paused() async throws -> Bool {
                try await client.send(.get, "/", as: Auth.bearer, json: true).decode(OverviewPaused.self).queuePaused
            }
            let before = try await paused()
            let pause = try await client.send(.post, "/pause", as: Auth.admin)
            let after = try await paused()
            let again = try await paused()
            let resume = try await client.send(.post, "/resume", as: Auth.admin)
            let resumed = try await paused()
            #expect(!before && pause.status == .seeOther && after && again && resume.status == .seeOther && !resumed)
        }
        #expect(queries("tally") == 13, "the first poll still shared, one read after the pause, one after the resume")
        await queue.close()
    }

    private struct OverviewPaused: Decodable {
        var queuePaused: Bool
    }
}
