import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import MetricsTestKit
import OfflineQueue
import QueueConsole
import Testing

@Suite("QueueConsole audit")
struct ConsoleAuditTests {
    @Test func everyActionWritesWhoWhatWhichAndResult() async throws {
        let fixture = try ConsoleFixture()
        let logs = InMemoryLogHandler()
        let console = QueueConsole(queue: fixture.queue, users: fixture.console.users, logger: Logger(label: "audit") { _ in logs })
        let dead = try await fixture.enqueue("/missing")
        let delivered = try await fixture.enqueue("/ok")
        try await fixture.drain()
        try await Application(router: console.router()).test(.router) { client in
            _ = try await client.send(.post, "/entries/\(dead)/retry")
            _ = try await client.send(.post, "/bulk/discard", as: Auth.bearer, form: "id=\(delivered)")
            _ = try await client.send(.post, "/pause", form: "group=g1")
        }
        await fixture.close()
        let audit = logs.entries.filter { $0.message == "console action" }
        #expect(audit.count == 3, "\(logs.entries)")
        #expect(audit.map { $0.metadata["user"] } == ["admin", "robot", "admin"])
        #expect(audit.map { $0.metadata["action"] } == ["retry", "discard", "pause"])
        #expect(audit[0].metadata["ids"] == .array(["\(dead)"]))
        #expect(audit[1].metadata["result"] == "discarded 1")
        #expect(audit[2].metadata["result"] == "paused group g1")
    }

    @Test func everyActionCountsInMetricsByActionAndResult() async throws {
        let fixture = try ConsoleFixture()
        let metrics = TestMetrics()
        let console = QueueConsole(queue: fixture.queue, users: fixture.console.users, metricsFactory: metrics)
        let dead = try await fixture.enqueue("/missing")
        let delivered = try await fixture.enqueue("/ok")
        try await fixture.drain()
        try await Application(router: console.router()).test(.router) { client in
            _ = try await client.send(.post, "/entries/\(dead)/retry")
            _ = try await client.send(.post, "/entries/\(delivered)/retry")
            _ = try await client.send(.post, "/pause", form: "group=g1")
            _ = try await client.send(.post, "/pause", form: "group=g1")
            _ = try await client.send(.post, "/bulk/discard-matching/confirm", form: "through=\(delivered)")
            _ = try await client.send(.post, "/pause", as: Auth.viewer, form: "")
        }
        await fixture.close()
        func count(_ action: String, _ result: String) throws -> Int64 {
            try metrics.expectCounter("courier_console_actions_total", [("action", action), ("result", result)]).totalValue
        }
        #expect(try count("retry", "changed") == 1)
        #expect(try count("retry", "unchanged") == 1, "a delivered entry is not retried")
        #expect(try count("pause", "changed") == 1 && count("pause", "unchanged") == 1)
        #expect(try count("discard", "changed") == 1)
        #expect(metrics.counters.count == 5, "a read-only user's refused POST is no action")
    }
}
