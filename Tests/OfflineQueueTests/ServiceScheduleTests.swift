import Foundation
@testable import OfflineQueue
@testable import OfflineQueueCore
import QueueTestSupport
import Testing

/// The service's schedule without a store or a clock: readings in, steps out.
@Suite("ServiceSchedule: when the service drains, applies retention and waits")
struct ServiceScheduleTests {
    static let boot = "boot-a"
    static func at(_ uptime: Double, boot: String = boot) -> QueueTime {
        QueueTime(wall: .init(timeIntervalSince1970: 1_800_000_000 + uptime), boot: boot, uptime: uptime)
    }

    static func schedule() -> ServiceSchedule {
        ServiceSchedule(pollInterval: .seconds(60), retentionInterval: .seconds(3600), idleFloor: .milliseconds(100))
    }

    @Test("retention at the start, then a drain; after a drain with nothing due, a wait until the poll")
    func start() {
        var schedule = Self.schedule()
        #expect(schedule.next(at: Self.at(100)) == .applyRetention)
        schedule.retentionApplied(at: Self.at(100))
        #expect(schedule.next(at: Self.at(100)) == .drain)
        schedule.drained(didWork: false, nextDue: nil)
        #expect(schedule.next(at: Self.at(101)) == .wait(untilUptime: 161))
        schedule.woke()
        #expect(schedule.next(at: Self.at(161)) == .drain)
    }

    @Test("something due: at once after a drain that did work, not before the floor after one that did nothing; a later due time shortens the poll")
    func due() {
        var schedule = Self.schedule()
        schedule.retentionApplied(at: Self.at(0))
        let dueNow = DueTime(boot: Self.boot, uptime: 10)
        schedule.drained(didWork: true, nextDue: dueNow)
        #expect(schedule.next(at: Self.at(10)) == .drain)
        schedule.drained(didWork: false, nextDue: dueNow)
        guard case .wait(let until) = schedule.next(at: Self.at(10)) else {
            Issue.record("expected a wait")
            return
        }
        #expect(abs(until - 10.1) < 1e-9)
        schedule.drained(didWork: true, nextDue: DueTime(boot: Self.boot, uptime: 40))
        #expect(schedule.next(at: Self.at(10)) == .wait(untilUptime: 40))
        schedule.drained(didWork: true, nextDue: DueTime(boot: Self.boot, uptime: 500))
        #expect(schedule.next(at: Self.at(10)) == .wait(untilUptime: 70), "the poll comes first")
        // A due time of another boot is due now.
        schedule.drained(didWork: true, nextDue: DueTime(boot: "boot-b", uptime: 500))
        #expect(schedule.next(at: Self.at(10)) == .drain)
    }

    @Test("a wait for a due time ends at that time, not up to a millisecond past it (what remains is rounded up to a millisecond)")
    func waitEndsAtTheDueTime() {
        // The readings of a ServiceTests run that failed: the due time half an hour after a
        // boot-clock reading whose difference is 1800.0000000000036 s in Double, which rounded
        // up to 1800.001 s put the wait's end past the reading the clock was moved to.
        let began = Self.at(31714.684205101)
        let due = DueTime(boot: Self.boot, uptime: 31714.684205101 + 1800)
        var schedule = Self.schedule()
        schedule.retentionApplied(at: began)
        let hourly = ServiceSchedule(pollInterval: .seconds(3600), retentionInterval: .seconds(86400), idleFloor: .milliseconds(100))
        for var candidate in [schedule, hourly] {
            candidate.retentionApplied(at: began)
            candidate.drained(didWork: false, nextDue: due, began: began)
            let step = candidate.next(at: began)
            if candidate.pollInterval > .seconds(1800) {
                #expect(step == .wait(untilUptime: due.uptime), "\(step)")
            } else {
                #expect(step == .wait(untilUptime: began.uptime + 60), "the poll comes first: \(step)")
            }
        }
    }

    @Test("an entry that came due after the drain began: the next drain at once, not after the floor; the floor from that one on")
    func cameDueDuringTheDrain() {
        var schedule = Self.schedule()
        schedule.retentionApplied(at: Self.at(0))
        let due = DueTime(boot: Self.boot, uptime: 1800)
        // The drain began a second early (its claims found nothing due) and ended once it was due.
        schedule.drained(didWork: false, nextDue: due, began: Self.at(1799))
        #expect(schedule.next(at: Self.at(1800)) == .drain)
        // That drain began when it was due, and claimed nothing (in flight elsewhere, say).
        schedule.drained(didWork: false, nextDue: due, began: Self.at(1800))
        guard case .wait(let until) = schedule.next(at: Self.at(1800)) else {
            Issue.record("expected a wait")
            return
        }
        #expect(abs(until - 1800.1) < 1e-9)
        // A drain of another boot's reading says nothing of this one's due time.
        schedule.drained(didWork: false, nextDue: due, began: Self.at(5, boot: "boot-b"))
        #expect(schedule.next(at: Self.at(1800)) != .drain)
    }

    @Test("retention again once its interval has passed, between drains and at most once per drain; a new boot counts as passed")
    func retention() {
        var schedule = Self.schedule()
        schedule.retentionApplied(at: Self.at(0))
        schedule.drained(didWork: true, nextDue: nil)
        #expect(schedule.next(at: Self.at(3599)) == .wait(untilUptime: 3659))
        #expect(schedule.next(at: Self.at(3600)) == .applyRetention)
        schedule.retentionApplied(at: Self.at(3600))
        #expect(schedule.next(at: Self.at(3600)) == .wait(untilUptime: 3660), "then the wait, not retention again")
        schedule.woke()
        #expect(schedule.next(at: Self.at(9000)) == .drain, "a drain first, retention after it")
        schedule.drained(didWork: false, nextDue: nil)
        #expect(schedule.next(at: Self.at(9000)) == .applyRetention)
        schedule.retentionApplied(at: Self.at(9000))
        schedule.drained(didWork: false, nextDue: nil)
        #expect(schedule.next(at: Self.at(5, boot: "boot-b")) == .applyRetention, "a new boot")
    }
}
