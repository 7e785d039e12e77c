import Reachability
import TestSupport

/// Waits up to `limit` (a hang guard) for `monitor` to report a status matching `predicate`
/// (the current one counts), and returns it; `nil` when the time ran out or the stream ended.
func waitForStatus(
    _ monitor: any NetworkMonitor, limit: Duration = .hangGuard, where predicate: @escaping @Sendable (NetworkStatus) -> Bool
) async -> NetworkStatus? {
    await withTaskGroup(of: NetworkStatus?.self) { group in
        group.addTask {
            for await status in monitor.statusUpdates() where predicate(status) { return status }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Waits up to `limit` (a hang guard) for `monitor` to report exactly `expected`.
func waitForStatus(_ monitor: any NetworkMonitor, _ expected: NetworkStatus, limit: Duration = .hangGuard) async -> Bool {
    await waitForStatus(monitor, limit: limit) { $0 == expected } != nil
}

/// Records every status a monitor emits, for checks on the whole sequence.
final class StatusRecorder: Sendable {
    private let task: Task<[NetworkStatus], Never>

    init(_ monitor: any NetworkMonitor) {
        let stream = monitor.statusUpdates()
        task = Task {
            var seen: [NetworkStatus] = []
            for await status in stream { seen.append(status) }
            return seen
        }
    }

    /// Everything emitted until the monitor stopped.
    func finish() async -> [NetworkStatus] { await task.value }

    /// Whether the stream ends within `limit` (a hang guard).
    func ends(within limit: Duration = .hangGuard) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { _ = await self.finish(); return true }
            group.addTask { try? await Task.sleep(for: limit); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
