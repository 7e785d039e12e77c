import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
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
}
