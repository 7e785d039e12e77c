import CourierTesting
import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import OfflineQueueCore
import PostgresNIO
import QueueTestSupport
import Testing
import TestSupport

/// Loops of entries that wait for each other: refused at enqueue through the library, and, in a
/// queue written before they were refused, counted as stuck and released by an operator.
@Suite("Offline work in steps: no entry waits for itself")
struct DependencyLoopTests {
    private static func request(_ path: String, after: [EntryID] = [], coalescing: String? = nil) -> QueuedRequest {
        QueuedRequest(method: "POST", url: "https://example.test" + path, options: EnqueueOptions(after: after, coalescingKey: coalescing))
    }

    @Test("the rule: the shortest loop a link would close, and the entries that wait through a loop")
    func rule() {
        typealias Link = DependencyRule.Link
        #expect(DependencyRule.loop(child: 3, parents: [1, 3], below: []) == [3, 3])
        #expect(DependencyRule.loop(child: 3, parents: [1, 2], below: []) == nil)
        // 2 and 4 wait for 1; 3 waits for 2 and 4; 5 waits for 3.
        let below = [Link(child: 2, parent: 1), Link(child: 4, parent: 1), Link(child: 3, parent: 2), Link(child: 3, parent: 4), Link(child: 5, parent: 3)]
        #expect(DependencyRule.loop(child: 1, parents: [9, 3], below: below) == [1, 3, 2, 1])
        #expect(DependencyRule.loop(child: 1, parents: [5], below: below) == [1, 5, 3, 2, 1])
        #expect(DependencyRule.loop(child: 1, parents: [9], below: below) == nil)
        // Stuck: 1 and 2 wait for each other, 3 for 2; 4 waits for 5, which waits for nothing blocked.
        let links = [Link(child: 1, parent: 2), Link(child: 2, parent: 1), Link(child: 3, parent: 2), Link(child: 4, parent: 5), Link(child: 6, parent: 4)]
        #expect(DependencyRule.stuck(links) == [1, 2, 3])
        #expect(DependencyRule.stuck([Link(child: 7, parent: 7)]) == [7])
        #expect(DependencyRule.stuck([]).isEmpty)
    }

    @Test("through the library: an entry naming its own id, and a replacement closing a loop, are refused with nothing stored", arguments: StoreKind.allCases)
    func refused(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let queue = contract.first
            let first = try await queue.enqueue([Self.request("/edit-1", coalescing: "k")])[0].id
            let child = try await queue.enqueue([Self.request("/child", after: [first])])[0].id
            await #expect(throws: QueueError.dependencyCycle([child + 1, child + 1])) {
                _ = try await queue.enqueue([Self.request("/self", after: [child + 1])])
            }
            await #expect(throws: QueueError.dependencyCycle([first, child, first])) {
                _ = try await queue.enqueue([Self.request("/edit-2", after: [child], coalescing: "k")])
            }
            let error = QueueError.dependencyCycle([first, child, first])
            #expect(error.description == "entry \(first) would wait for itself, and never be sent: \(first) waits for \(child), which waits for \(first); nothing was stored")
            let counts = try await queue.counts()
            #expect(counts.total == 2 && counts.blocked == 1 && counts.stuck == 0 && counts.superseded == 0)
            #expect(try await queue.entry(first)?.url == "https://example.test/edit-1")
        }
    }

    @Test("a loop stored before loops were refused: counted as stuck with what waits through it, shown, and released", arguments: StoreKind.shared)
    func storedLoop(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let queue = contract.first
            let a = try await contract.insert([Spec(key: "a")])[0]
            let b = try await contract.insert([Spec(key: "b", after: [a])])[0]
            let c = try await contract.insert([Spec(key: "c", after: [b])])[0]
            let d = try await contract.insert([Spec(key: "d")])[0]
            let e = try await contract.insert([Spec(key: "e", after: [d])])[0]
            try await Self.closeLoop(contract.place, child: a, parent: b)
            var counts = try await queue.counts()
            #expect(counts.blocked == 4 && counts.stuck == 3, "\(counts)")
            #expect(try await queue.stuckEntries() == [a, b, c])
            // A drain sends what it can (d, then e) and says what is left that nothing will release.
            let summary = try await queue.drain(.once)
            #expect(summary.stuck == 3 && summary.blocked == 3, "\(summary)")
            #expect(try await queue.entry(e)?.state != .blocked)
            // Released: `a` waits for nothing and is due; the rest wait for it as before.
            #expect(try await queue.release([a, d]) == [a], "d is not blocked: left as it is")
            #expect(try await queue.dependencies(of: a) == EntryDependencies(parents: [], children: [b]))
            #expect(try await queue.entry(a)?.state == .pending)
            counts = try await queue.counts()
            #expect(counts.blocked == 2 && counts.stuck == 0)
            #expect(try await queue.stuckEntries().isEmpty)
            await #expect(throws: QueueError.noSuchEntry(9_999)) { try await queue.release([9_999]) }
        }
    }

    /// Writes a link from `child` to `parent` and blocks `child`, as a version that did not
    /// refuse loops could.
    static func closeLoop(_ place: TestStore, child: EntryID, parent: EntryID) async throws {
        if let schema = place.schema {
            _ = try await withPostgres(place.path) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: """
                    INSERT INTO "\(schema)".entry_edge (child, parent, when_parent_dies, parent_delivered) VALUES (\(child), \(parent), 'die', false);
                    """), logger: testLogger)
                try await connection.query(PostgresQuery(unsafeSQL: "UPDATE \"\(schema)\".entry SET state = 'blocked' WHERE id = \(child)"), logger: testLogger)
            }
        } else {
            let database = try DatabaseQueue(path: place.path)
            try await database.write { db in
                try db.execute(sql: "INSERT INTO entry_edge (child, parent, when_parent_dies, parent_delivered) VALUES (?, ?, 'die', 0)", arguments: [child, parent])
                try db.execute(sql: "UPDATE entry SET state = 'blocked' WHERE id = ?", arguments: [child])
            }
            try database.close()
        }
    }
}
