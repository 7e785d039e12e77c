import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import Reachability

/// The network monitor the flags ask for: netlink, plus an HTTP probe when given a URL.
enum Monitors {
    /// `nil` with `--no-reachability`. When netlink cannot be opened (a sandbox without it),
    /// says so and goes on without a monitor rather than refusing to send.
    static func make(probeURL: String?, disabled: Bool, transport: any Transport) throws -> (any NetworkMonitor)? {
        guard !disabled else { return nil }
        var members: [any NetworkMonitor] = []
        do {
            members.append(try NetlinkMonitor())
        } catch {
            complain("warning: netlink is not available (\(error)); sending without a network monitor")
        }
        if let probeURL {
            guard let url = URL(string: probeURL), url.scheme == "http" || url.scheme == "https" else {
                throw ValidationFailure("--probe-url \(probeURL.debugDescription) is not an http or https URL")
            }
            let probe = ProbeMonitor(configuration: ProbeConfiguration(url: url, timeout: .seconds(5), interval: .seconds(60)), transport: transport, upstream: members.first)
            probe.start()
            members.append(probe)
        }
        switch members.count {
        case 0: return nil
        case 1: return members[0]
        default: return CombinedMonitor.all(of: members)
        }
    }

    /// Waits (up to `limit`) for a probe to finish its first check, so a drain does not give
    /// up on a network that simply has not been probed yet.
    static func settle(_ monitor: (any NetworkMonitor)?, limit: Duration = .seconds(6)) async {
        guard let monitor, monitor.status == .limited(.unprobed) else { return }
        let waiter = Task { await monitor.firstStatus { $0 != .limited(.unprobed) } }
        let timer = Task {
            try? await Task.sleep(for: limit)
            waiter.cancel()
        }
        _ = await waiter.value
        timer.cancel()
    }
}

/// A command-line value that does not make sense; exits 64.
struct ValidationFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
