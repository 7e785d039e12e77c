import ArgumentParser
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import Reachability

/// `--probe-url` and `--no-reachability`, shared by `drain` and `run`: which network monitor
/// decides when to send.
struct NetworkOptions: ParsableArguments {
    @Option(name: .customLong("probe-url"), help: ArgumentHelp("Also require this URL to answer 204 before sending (captive portals).", valueName: "url"))
    var probeURL: String?

    @Flag(name: .long, help: "Send without asking netlink whether the network is there.")
    var noReachability = false

    func validate() throws {
        if let probeURL, probe == nil {
            throw ValidationError("--probe-url \(probeURL.debugDescription) is not an http or https URL")
        }
    }

    private var probe: URL? {
        guard let probeURL, let url = URL(string: probeURL), url.scheme == "http" || url.scheme == "https", url.host != nil else { return nil }
        return url
    }

    /// Netlink, plus the probe when given; `nil` with `--no-reachability`. When netlink cannot
    /// be opened (a sandbox without it), says so and goes on without it rather than refusing
    /// to send.
    func makeMonitor(transport: any Transport) -> (any NetworkMonitor)? {
        guard !noReachability else { return nil }
        var members: [any NetworkMonitor] = []
        do {
            members.append(try NetlinkMonitor())
        } catch {
            complain("warning: netlink is not available (\(error)); sending without a network monitor")
        }
        if let probe {
            let monitor = ProbeMonitor(configuration: ProbeConfiguration(url: probe, timeout: .seconds(5), interval: .seconds(60)), transport: transport, upstream: members.first)
            monitor.start()
            members.append(monitor)
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
            await BootClock.sleep(for: limit)
            waiter.cancel()
        }
        _ = await waiter.value
        timer.cancel()
    }
}
