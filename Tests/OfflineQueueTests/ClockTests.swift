import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Time rules under an injected clock: wall-clock steps of days, a reboot, and a day-long
/// outage, without waiting for any of it.
@Suite("Clocks: steps, reboots and long outages")
struct ClockTests {
    static let policy = DeliveryPolicy(backoff: Backoff(base: .seconds(1), cap: .seconds(300)))

    func queue(_ folder: TempFolder, _ server: TestHTTPServer, _ clock: ManualQueueClock, policy: DeliveryPolicy = Self.policy) throws -> OfflineQueue {
        try makeQueue(path: folder.databasePath, server: server, policy: policy) { $0.clock = clock.queueClock }
    }

    @Test("a wall-clock step of ±3 days (and 8 days back) between enqueue and drain: nothing expires unsent, nothing stalls", arguments: [-8 * 86400, -3 * 86400, 3 * 86400])
    func stepBetweenEnqueueAndDrain(seconds: Int) async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let clock = ManualQueueClock()
        let queue = try queue(folder, server, clock)
        let tickets = try await (0..<3).asyncMap { _ in try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString) }
        clock.stepWall(by: .seconds(seconds))
        let summary = try await queue.drain()
        #expect(summary.delivered == 3)
        #expect(summary.dead == 0)
        #expect(Set(idempotencyKeys(server)) == Set(tickets.map(\.idempotencyKey)))
        await server.shutdown()
    }

    @Test("a backoff under way survives a step back of 3 days: the entry is due when its backoff ends, not 3 days later")
    func stepBackDuringBackoff() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let failures = LockedBox(1)
        server.route("/flaky") { _, writer in
            let fail = failures.withLock { left -> Bool in defer { left -= 1 }; return left > 0 }
            try await writer.respond(status: fail ? 503 : 200)
        }
        let clock = ManualQueueClock()
        let queue = try queue(folder, server, clock)
        _ = try await queue.enqueue(method: "POST", url: server.url("/flaky").absoluteString)
        let first = try await queue.drain(.once)
        #expect(first.failed == 1)
        clock.stepWall(by: .seconds(-3 * 86400))
        clock.advance(by: .seconds(2))   // past the first backoff (at most 1 s)
        let second = try await queue.drain()
        #expect(second.delivered == 1, "a backward step does not stall the entry")
        await server.shutdown()
    }

    @Test("a forward step of 3 days while sends are in flight: the live drainer keeps its leases, and a second drainer takes nothing")
    func stepForwardDuringDrain() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let clock = ManualQueueClock()
        let arrived = LockedBox(0)
        let release = LockedBox(false)
        server.route("/hold") { _, writer in
            arrived.withLock { $0 += 1 }
            while !release.current { try await Task.sleep(for: .milliseconds(10)) }
            try await writer.respond(status: 200)
        }
        let policy = DeliveryPolicy(backoff: Backoff(base: .seconds(1), cap: .seconds(300)), leaseDuration: .seconds(60))
        let first = try queue(folder, server, clock, policy: policy)
        let second = try queue(folder, server, clock, policy: policy)
        let tickets = try await (0..<4).asyncMap { _ in try await first.enqueue(method: "POST", url: server.url("/hold").absoluteString) }
        let drain = Task { try await first.drain() }
        #expect(await eventually { arrived.current == 4 })
        clock.stepWall(by: .seconds(3 * 86400))
        let other = try await second.drain()
        #expect(other.delivered == 0)
        #expect(other.inflightElsewhere == 4, "the entries are in flight under the first drainer")
        release.withLock { $0 = true }
        let summary = try await drain.value
        #expect(summary.delivered == 4)
        #expect(summary.leasesLost == 0)
        #expect(idempotencyKeys(server).sorted() == tickets.map(\.idempotencyKey).sorted(), "each sent exactly once")
        await server.shutdown()
    }

    @Test("a day of 503s: no entry is dead-lettered, and all are delivered when the server returns; with origin health, one probe a drain, not five requests", arguments: [false, true])
    func dayLongOutage(health: Bool) async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let down = LockedBox(true)
        server.route("/outage") { _, writer in try await writer.respond(status: down.current ? 503 : 201) }
        let clock = ManualQueueClock()
        // The default policy; without origin health, each entry keeps its own backoff.
        let queue = try makeQueue(path: folder.databasePath, server: server, policy: DeliveryPolicy()) { configuration in
            configuration.clock = clock.queueClock
            if !health { configuration.flow.health = .never }
        }
        let tickets = try await (0..<5).asyncMap { _ in try await queue.enqueue(method: "POST", url: server.url("/outage").absoluteString) }
        var failed = 0
        for _ in 0..<(24 * 12) {   // every 5 minutes (the backoff cap) for 24 hours
            let summary = try await queue.drain(.once)
            failed += summary.failed
            #expect(summary.dead == 0)
            clock.advance(by: .seconds(300))
        }
        if health {
            // The five opened the circuit; then one probe a drain, costing its entry no attempt.
            #expect(failed >= 5 && failed <= 5 + 24 * 12, "\(failed) requests")
        } else {
            #expect(failed > 5 * 100, "every entry was tried again and again")
        }
        down.withLock { $0 = false }
        clock.advance(by: .seconds(300))
        let summary = try await queue.drain()
        #expect(summary.delivered == 5)
        let counts = try await queue.counts()
        #expect(counts.dead == 0)
        #expect(counts.delivered == 5)
        let attempts = try await tickets.asyncMap { try await queue.entry($0.id)?.attempts ?? 0 }
        #expect(attempts.allSatisfy { health ? $0 <= 2 : $0 > 100 }, "\(attempts)")
        await server.shutdown()
    }

    @Test("the age limit counts on the boot clock; after a reboot, by the wall clock, never below zero")
    func ageAcrossReboot() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let server = try await TestHTTPServer.start()
        let clock = ManualQueueClock()
        var policy = DeliveryPolicy()
        policy.maxAge = .seconds(3600)
        let queue = try queue(folder, server, clock, policy: policy)
        let young = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        // The wall clock jumps two hours ahead (an NTP fix): the entry is still seconds old.
        clock.stepWall(by: .seconds(7200))
        #expect(try await queue.drain().delivered == 1)
        #expect(try await queue.entry(young.id)?.state == .delivered)

        // An entry two hours old when the machine reboots (wall clock right) is expired after it.
        let old = try await queue.enqueue(method: "POST", url: server.url("/echo").absoluteString)
        clock.advance(by: .seconds(7200))
        clock.reboot()
        let summary = try await queue.drain()
        #expect(summary.dead == 1)
        #expect(try await queue.entry(old.id)?.deadReason == .expired)
        await server.shutdown()
    }
}
