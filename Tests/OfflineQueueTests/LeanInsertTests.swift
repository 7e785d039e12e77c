import Foundation
import GRDB
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Schema 8: an insert enters only the row, its idempotency key and the claim order. What the
/// indexes it no longer has did is done otherwise: ids never given twice without
/// AUTOINCREMENT, rows of another boot carried over by `queue_meta`'s mark, rows whose readings
/// lie in this boot's future rebased at a drain's start, finished rows counted and listed.
@Suite("Lean inserts: ids, boots and readings without the indexes an insert paid for")
struct LeanInsertTests {
    func execute(_ path: String, _ sql: String) async throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        try await DatabaseQueue(path: path, configuration: configuration).write { try $0.execute(sql: sql) }
    }

    func scalar(_ path: String, _ sql: String) async throws -> Int? {
        try await DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: sql) }
    }

    /// A queue on an injected clock that has delivered one entry, so its drain has set the
    /// boot mark and rebased what it found.
    func drainedOnce(_ folder: TempFolder, _ server: TestHTTPServer) async throws -> (OfflineQueue, ManualQueueClock) {
        let clock = ManualQueueClock()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.clock = clock.queueClock }
        _ = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        #expect(try await queue.drain().delivered == 1)
        return (queue, clock)
    }

    @Test("an id is never given twice: not after the newest entry is purged, not after every entry is")
    func idsNeverReused() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let url = server.url("/echo").absoluteString
        let first = try await (0..<3).asyncMap { _ in try await queue.enqueue(method: "POST", url: url).id }
        #expect(try await queue.purge(.ids([first[2]])) == 1)
        let fourth = try await queue.enqueue(method: "POST", url: url).id
        #expect(fourth == first[2] + 1, "the purged newest id is not given again")
        #expect(try await queue.drain().delivered == 3)
        #expect(try await queue.purge(.states([.delivered, .pending, .dead], finishedBefore: nil)) == 3)
        let fifth = try await queue.enqueue(method: "POST", url: url).id
        #expect(fifth == fourth + 1, "an empty table does not start over")
        // A retention pass deletes the newest delivered entry too.
        #expect(try await queue.drain().delivered == 1)
        _ = try await queue.purge(.states([.delivered], finishedBefore: Date().addingTimeInterval(60)))
        #expect(try await queue.enqueue(method: "POST", url: url).id == fifth + 1)
        await server.shutdown()
    }

    @Test("a schema 7 file migrates: its rows and ids kept, its sequence continued past ids it had deleted")
    func fromSchema7() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let url = server.url("/echo").absoluteString
        var kept: [EntryID] = []
        do {
            let queue = try makeQueue(path: folder.databasePath, server: server)
            kept = try await (0..<3).asyncMap { _ in try await queue.enqueue(method: "POST", url: url).id }
        }
        // What schema 7 kept beside its rows: AUTOINCREMENT's sequence, here past ids 4...40
        // that it gave and deleted; no `queue_meta`, no trigger.
        try await execute(folder.databasePath, backToSchema8 + """
            DROP TRIGGER entry_id_floor; DROP TABLE queue_meta;
            CREATE TABLE sequence_maker (id INTEGER PRIMARY KEY AUTOINCREMENT); DROP TABLE sequence_maker;
            INSERT INTO sqlite_sequence (name, seq) VALUES ('entry', 40);
            DELETE FROM grdb_migrations WHERE identifier = 'v8-lean-insert';
            PRAGMA user_version = 7
            """)
        let queue = try makeQueue(path: folder.databasePath, server: server)
        #expect(try await queue.entries(EntryFilter(limit: 10)).map(\.id) == kept)
        #expect(try await queue.enqueue(method: "POST", url: url).id == 41)
        #expect(try await queue.drain().delivered == 4)
        #expect(try await scalar(folder.databasePath, "PRAGMA user_version") == 18)
        #expect(try await scalar(folder.databasePath, "SELECT count(*) FROM sqlite_sequence WHERE name = 'entry'") == 0, "no AUTOINCREMENT left")
        await server.shutdown()
    }

    @Test("a row a process of another boot writes after this boot's drain is carried over: it waits what its wall time says")
    func otherBootAfterCarryOver() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let url = server.url("/echo").absoluteString
        let (queue, clock) = try await drainedOnce(folder, server)
        // Another boot's process (its boot clock near zero) schedules an entry a minute out.
        let now = clock.queueClock.now()
        let other = ManualQueueClock(start: QueueTime(wall: now.wall, boot: "another-boot", uptime: 10))
        let writer = try makeQueue(path: folder.databasePath, server: server) { $0.clock = other.queueClock }
        _ = try await writer.enqueue(method: "POST", url: url, options: EnqueueOptions(notBefore: now.wall.addingTimeInterval(60)))
        // Read on its own boot clock, its due time (10 + 60) is long past here; carried over by
        // its wall time, it is a minute away.
        #expect(try await queue.drain().delivered == 0, "not sent before the time it was given")
        let counts = try await queue.counts()
        let wait = try #require(counts.nextAttemptAt).timeIntervalSince(clock.queueClock.now().wall)
        #expect((55...61).contains(wait))
        clock.advance(by: .seconds(61))
        #expect(try await queue.drain().delivered == 1)
        await server.shutdown()
    }

    @Test("a row whose readings lie in this boot's future (a faked boot clock) is sent by the next drain, its age counted from then")
    func readingsAhead() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let url = server.url("/echo").absoluteString
        let (queue, clock) = try await drainedOnce(folder, server)
        let now = clock.queueClock.now()
        let ahead = ManualQueueClock(start: QueueTime(wall: now.wall, boot: now.boot, uptime: now.uptime + 3 * 86400))
        let writer = try makeQueue(path: folder.databasePath, server: server) { $0.clock = ahead.queueClock }
        let ticket = try await writer.enqueue(method: "POST", url: url)
        #expect(try await queue.drain().delivered == 1)
        #expect(try await queue.entry(ticket.id)?.state == .delivered)
        await server.shutdown()
    }

    @Test("old entries rewritten by a process whose boot clock reads ahead (a retry, a bulk retry, every dead one retried, a coalescing edit, a child unblocked) are sent by the next drain")
    func rewrittenAhead() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let (queue, clock) = try await drainedOnce(folder, server)
        let ok = server.url("/echo").absoluteString, gone = server.url("/status/410").absoluteString
        var dead: [EntryID] = []
        for _ in 0..<3 { dead.append(try await queue.enqueue(method: "POST", url: gone).id) }
        let later = clock.queueClock.now().wall.addingTimeInterval(3600)
        _ = try await queue.enqueue(method: "POST", url: ok, options: EnqueueOptions(notBefore: later, coalescingKey: "note"))
        #expect(try await queue.drain().dead == 3)
        _ = try await queue.enqueue(method: "POST", url: ok)
        #expect(try await queue.drain().delivered == 1)

        let now = clock.queueClock.now()
        let ahead = ManualQueueClock(start: QueueTime(wall: now.wall, boot: now.boot, uptime: now.uptime + 3 * 86400))
        let writer = try makeQueue(path: folder.databasePath, server: server) { $0.clock = ahead.queueClock }
        #expect(try await writer.retry([dead[0]]) == [dead[0]])
        #expect(try await queue.drain().dead == 1, "a retry: attempted at once")
        #expect(try await writer.retry(matching: EntrySelection(states: [.dead], after: dead[0], through: dead[1])).ids == [dead[1]])
        #expect(try await queue.drain().dead == 1, "a bulk retry")
        #expect(try await writer.retryDead() == dead)
        #expect(try await queue.drain().dead == 3, "every dead entry")
        _ = try await writer.enqueue(method: "POST", url: ok, options: EnqueueOptions(coalescingKey: "note"))
        #expect(try await queue.drain().delivered == 1, "the edit that replaced the waiting entry")

        // Written ahead with a wait: its wait counts from the drain that meets it, not from the
        // writer's reading 3 days on.
        let waiting = try await writer.enqueue(method: "POST", url: ok, options: EnqueueOptions(notBefore: ahead.queueClock.now().wall.addingTimeInterval(60)))
        #expect(try await queue.drain().delivered == 0, "not before its wait")
        clock.advance(by: .seconds(61))
        #expect(try await queue.drain().delivered == 1)
        #expect(try await queue.entry(waiting.id)?.state == .delivered)

        // A child written ahead while its parent waits: blocked through a drain, pending once its
        // parent is delivered, sent by that drain or the next.
        let parent = try await queue.enqueue(method: "POST", url: ok, options: EnqueueOptions(notBefore: later))
        _ = try await writer.enqueue(method: "POST", url: ok, options: EnqueueOptions(after: [parent.id]))
        #expect(try await queue.drain().delivered == 0)
        clock.advance(by: .seconds(3601))
        _ = try await queue.drain()
        #expect(try await queue.entry(parent.id)?.state == .delivered)
        _ = try await queue.drain()
        #expect(try await queue.counts().pending == 0, "the child sent")
        await server.shutdown()
    }

    @Test("a claim whose walk is filled by rows written ahead with a wait rebases them and walks on to the due entry behind them; their wait counts from then")
    func aheadWaitsFillTheWalk() async throws {
        let contract = try await Contract(.sqlite)
        try await removing(contract) {
            let now = contract.now
            let ahead = QueueTime(wall: now.wall, boot: now.boot, uptime: now.uptime + 3600)
            let later = now.wall.addingTimeInterval(60)
            let waiting = try await contract.storage.insert([Spec(notBefore: later).entry, Spec(notBefore: later).entry], now: ahead).map(\.id)
            let due = try await contract.insert([Spec()])
            #expect(try await contract.claim(limit: 2).claimed.map(\.id) == due)
            #expect(try await contract.claim(limit: 2).claimed.isEmpty, "the two wait")
            contract.clock.advance(by: .seconds(61))
            #expect(try await contract.claim(limit: 2).claimed.map(\.id) == waiting)
        }
    }

    /// The due entries by their definition, row by row: pending and not in flight, no pause
    /// holding them, due by the boot clock when on this boot, by the wall clock otherwise.
    func dueByRow(_ path: String, _ now: QueueTime) async throws -> Int {
        try await DatabaseQueue(path: path).read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(*) FROM entry_view AS e WHERE e.state = 'pending'
                AND NOT EXISTS (SELECT 1 FROM pause WHERE pause.group_key IS NULL OR pause.group_key = e.group_key)
                AND CASE WHEN e.clock_boot = :boot THEN e.due_uptime <= :uptime ELSE e.next_attempt_at <= :wall END
                """, arguments: ["boot": now.boot, "uptime": now.uptime, "wall": now.wall.timeIntervalSince1970]) ?? 0
        }
    }

    @Test("the due count read from the indexes when every open row is on this boot matches a walk of every row: waits, retries, pauses, leases, another boot's rows before and after a drain carries them over")
    func dueFromIndexes() async throws {
        let contract = try await Contract(.sqlite)
        try await removing(contract) {
            let storage = contract.storage
            func expectDueByRow(_ expected: Int, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let counted = try await storage.counts(now: contract.now).due
                let byRow = try await dueByRow(contract.place.path, contract.now)
                #expect(counted == byRow && counted == expected, comment, sourceLocation: sourceLocation)
            }
            let carryOver = ClaimChores(carryOver: true)
            _ = try await storage.settleAndClaim([], now: contract.now, claimLimit: 0, lease: .seconds(60), attemptedSince: nil, chores: carryOver)
            let ids = try await contract.insert([
                Spec(group: "a"), Spec(group: "a"), Spec(group: "b"), Spec(), Spec(notBefore: contract.now.wall.addingTimeInterval(60)), Spec(),
            ])
            try await expectDueByRow(5, "all but the scheduled one")
            _ = try await contract.claim(limit: 2, lease: .seconds(600))
            _ = try await contract.settle([Settlement(id: ids[0], transition: .retry(.init(after: .seconds(10), error: "HTTP 503")))])
            #expect(try await storage.pause(group: "a", now: contract.now))
            try await expectDueByRow(2, "a1 waits, a2 held, b1 in flight")
            contract.clock.advance(by: .seconds(61))
            try await expectDueByRow(3, "the scheduled one due")
            #expect(try await storage.resume(group: "a", now: contract.now))
            try await expectDueByRow(5, "a1 and a2 due again")

            // A reboot: the rows are on the last boot until a drain of this one carries them over.
            contract.clock.reboot()
            try await expectDueByRow(5, "by their wall times; b1's claim lapsed with its boot but is not taken back yet")
            _ = try await contract.insert([Spec(), Spec(notBefore: contract.now.wall.addingTimeInterval(30))])
            try await expectDueByRow(6, "a new row of this boot clears the mark; one of two due")
            #expect(try await storage.pause(group: "b", now: contract.now))
            _ = try await storage.settleAndClaim([], now: contract.now, claimLimit: 0, lease: .seconds(60), attemptedSince: nil, chores: carryOver)
            try await expectDueByRow(6, "carried over (b1's lapsed claim gone, held by b's pause); the mark set again")
            #expect(try await storage.resume(group: "b", now: contract.now))
            try await expectDueByRow(7, "b1 due")

            // A row written by a process whose boot clock reads ahead: due for the indexes (the next
            // claim that meets it rebases it, due at once), not yet for the walk.
            let now = contract.now
            let ahead = QueueTime(wall: now.wall, boot: now.boot, uptime: now.uptime + 3600)
            let aheadID = try #require(try await storage.insert([Spec().entry], now: ahead).first).id
            #expect(try await storage.counts(now: contract.now).due == 8)
            #expect(try await dueByRow(contract.place.path, contract.now) == 7)
            let claimed = try await contract.claim(limit: 10, lease: .seconds(600)).claimed.map(\.id)
            #expect(claimed.contains(aheadID), "rebased and claimed with the others: \(claimed)")
            #expect(try await scalar(contract.place.path, "SELECT count(*) FROM entry WHERE budget_uptime > \(contract.now.uptime)") == 0)
        }
    }

    @Test("counts, the oldest pending entry and listings by state without an index of every row's state")
    func countsAndListings() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let clock = ManualQueueClock()
        let queue = try makeQueue(path: folder.databasePath, server: server) { $0.clock = clock.queueClock }
        let ok = server.url("/echo").absoluteString, gone = server.url("/status/410").absoluteString
        let delivered = try await queue.enqueue(method: "POST", url: ok)
        let dead = try await queue.enqueue(method: "POST", url: gone)
        #expect(try await queue.drain().delivered == 1)
        clock.advance(by: .seconds(5))
        // Pending entries of three priorities; the oldest is of the lowest one.
        let low = try await queue.enqueue(method: "POST", url: ok, options: EnqueueOptions(priority: -1))
        clock.advance(by: .seconds(1))
        _ = try await queue.enqueue(method: "POST", url: ok, options: EnqueueOptions(priority: 5))
        _ = try await queue.enqueue(method: "POST", url: ok)
        _ = try await queue.enqueue(method: "POST", url: ok, options: EnqueueOptions(notBefore: clock.queueClock.now().wall.addingTimeInterval(30)))
        let counts = try await queue.counts()
        #expect(counts.pending == 4 && counts.delivered == 1 && counts.dead == 1 && counts.inflight == 0)
        #expect(counts.due == 3)
        #expect(counts.oldestPendingCreatedAt == (try await queue.entry(low.id))?.createdAt)
        #expect(counts.nextAttemptAt.map { $0 <= clock.queueClock.now().wall } == true)
        #expect(try await queue.entries(EntryFilter(states: [.dead])).map(\.id) == [dead.id])
        #expect(try await queue.entries(EntryFilter(states: [.delivered, .dead])).map(\.id) == [delivered.id, dead.id])
        #expect(try await queue.entries(EntryFilter(states: [.pending])).count == 4)
        // Only the scheduled one left: the next due time is its own.
        _ = try await queue.drain()
        let later = try await queue.counts()
        #expect(later.pending == 1 && later.due == 0)
        let wait = try #require(later.nextAttemptAt).timeIntervalSince(clock.queueClock.now().wall)
        #expect((29...31).contains(wait))
        await server.shutdown()
    }

    @Test("a row whose state or dead reason this version does not know is an error naming the row, never read as another state")
    func unknownValues() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let queue = try makeQueue(path: folder.databasePath, server: server)
        let odd = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        let fine = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        // What a newer Courier, or a hand edit past the CHECK constraints, could leave.
        try await execute(folder.databasePath, """
            PRAGMA ignore_check_constraints = ON;
            UPDATE entry SET state = 'parked' WHERE id = \(odd.id)
            """)
        let expected = QueueError.corruptDatabase(path: folder.databasePath, reason: "entry \(odd.id) has state 'parked', which this version does not know")
        await #expect(throws: expected) { _ = try await queue.entry(odd.id) }
        await #expect(throws: expected) { _ = try await queue.entries() }
        await #expect(throws: expected) { _ = try await queue.counts() }
        #expect(try await queue.entry(fine.id)?.state == .pending, "other rows read as they are")
        try await execute(folder.databasePath, """
            PRAGMA ignore_check_constraints = ON;
            UPDATE entry SET state = 'dead', dead_reason = 'bored' WHERE id = \(odd.id)
            """)
        await #expect(throws: QueueError.corruptDatabase(path: folder.databasePath, reason: "entry \(odd.id) has dead reason 'bored', which this version does not know")) {
            _ = try await queue.entry(odd.id)
        }
        await server.shutdown()
    }
}
