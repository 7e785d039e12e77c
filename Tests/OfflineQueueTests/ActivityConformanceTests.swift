import Foundation
import HTTPCore
import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// The activity kept per minute (``ActivityMinute``, the console's chart) as the storage
/// contract keeps it, on every store: what two drainers add to one minute is summed, a backlog
/// replaces the minute's, old minutes go.
@Suite("Activity conformance: per-minute counters added to by every drainer, on every store")
struct ActivityConformanceTests {
    @Test("two drainers add to the same minute: counts summed, the newer backlog kept, a minute without one left without; minutes before the kept window deleted", arguments: StoreKind.allCases)
    func minutesSummedAndTrimmed(_ kind: StoreKind) async throws {
        let contract = try await Contract(kind)
        try await removing(contract) {
            let now = contract.now.wall
            let base = ActivityMinute.start(of: ActivityMinute.number(of: now) - 3)
            let minute = { (offset: Int) in base.addingTimeInterval(Double(offset) * 60) }
            let other = try await contract.drainer()
            try await contract.storage.recordActivity(
                [ActivityMinute(minute: minute(0), delivered: 3, failed: 1, pending: 10, due: 4)], keepingSince: minute(0)
            )
            try await other.store.recordActivity([
                ActivityMinute(minute: minute(0), delivered: 2),
                ActivityMinute(minute: minute(2), delivered: 1, pending: 7),
            ], keepingSince: minute(0))
            try await contract.storage.recordActivity([ActivityMinute(minute: minute(2), failed: 2, pending: 6, due: 1)], keepingSince: minute(0))

            let kept = try await other.store.activity(since: minute(0))
            #expect(kept == [
                ActivityMinute(minute: minute(0), delivered: 5, failed: 1, pending: 10, due: 4),
                ActivityMinute(minute: minute(2), delivered: 1, failed: 2, pending: 6, due: 1),
            ], "\(kept)")
            #expect(try await contract.storage.activity(since: minute(1)).map(\.minute) == [minute(2)], "from the minute asked on")

            // A write with a later window deletes what is before it.
            try await contract.storage.recordActivity([ActivityMinute(minute: minute(3), delivered: 1)], keepingSince: minute(1))
            #expect(try await contract.storage.activity(since: minute(0)).map(\.minute) == [minute(2), minute(3)])

            // What the queue reads: the last minutes up to now, oldest first, empty where nothing was kept.
            let series = try await contract.first.activity(minutes: 5)
            #expect(series.count == 5 && series.last?.minute == ActivityMinute.start(of: ActivityMinute.number(of: now)))
            // Minutes 0 to 3 are now-3 to now: minute 0 was deleted, minute 1 never written.
            #expect(series.map(\.delivered) == [0, 0, 0, 1, 1] && series.map(\.failed) == [0, 0, 0, 2, 0], "\(series)")
            #expect(series[3].pending == 6 && series[2].pending == nil)
        }
    }
}
