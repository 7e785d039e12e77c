import Reachability
import TestSupport

/// Runs `body` with a fresh lab and a ``NetlinkMonitor`` watching its inner namespace; the
/// monitor is stopped and the lab destroyed afterwards, whether `body` passes, fails or throws.
func withMonitoredLab(
    defaultRoute: Bool = true, _ body: (NetworkLab, NetlinkMonitor) async throws -> Void
) async throws {
    let lab = try await NetworkLab(defaultRoute: defaultRoute)
    defer { lab.destroy() }
    let monitor = try NetlinkMonitor(namespacePath: lab.innerPath)
    defer { monitor.stop() }
    try await body(lab, monitor)
}
