// reachability-bench: how fast does each monitor notice a link change?
//
// Builds a private pair of network namespaces joined by a veth pair (as the tests do), then
// flips the link 20 times each way in two scenarios and prints, per scenario and direction,
// the median and maximum time from starting `ip` to the status change:
//   - event:   NetlinkMonitor's status stream (event-driven, no interval)
//   - polling: a 1 s poller that dumps links, addresses and routes and computes the same status
// The `ip down`/`ip up` lines give how long the `ip` process itself took (spawn to exit), which
// is part of every figure above them.
// Needs root (CAP_SYS_ADMIN) and iproute2. Usage: swift run -c release reachability-bench [flips]
import Foundation
import HTTPCore
import Reachability
#if canImport(Glibc)
import Glibc
#endif

let flips = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 20
let id = String(UInt32.random(in: 0..<UInt32.max), radix: 16)
let inner = "courier-bench-\(id)-in"
let outer = "courier-bench-\(id)-out"
let innerLink = "cb\(id.prefix(6))i"
let outerLink = "cb\(id.prefix(6))o"

func report(_ message: String) {
    FileHandle.standardError.write(Data(message.utf8))
}

@discardableResult
func ip(_ arguments: [String], input: String? = nil) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].first(where: FileManager.default.isExecutableFile(atPath:)) ?? "/usr/sbin/ip")
    process.arguments = arguments
    let pipe = Pipe()
    if input != nil { process.standardInput = pipe }
    do { try process.run() } catch {
        report("cannot run ip: \(error)\n")
        exit(1)
    }
    if let input {
        pipe.fileHandleForWriting.write(Data(input.utf8))
        try? pipe.fileHandleForWriting.close()
    }
    process.waitUntilExit()
    return process.terminationStatus
}

func setUp() {
    let steps: [[String]] = [
        ["netns", "add", inner], ["netns", "add", outer],
        ["-n", inner, "link", "add", innerLink, "type", "veth", "peer", "name", outerLink, "netns", outer],
        ["-n", inner, "addr", "add", "10.77.0.1/24", "dev", innerLink],
        ["-n", outer, "addr", "add", "10.77.0.2/24", "dev", outerLink],
        ["-n", inner, "link", "set", innerLink, "up"], ["-n", outer, "link", "set", outerLink, "up"],
        ["-n", inner, "route", "add", "default", "via", "10.77.0.2"],
    ]
    for step in steps where ip(step) != 0 {
        report("setup failed at: ip \(step.joined(separator: " ")) (needs root and iproute2)\n")
        tearDown()
        exit(1)
    }
}

func tearDown() {
    ip(["netns", "delete", inner])
    ip(["netns", "delete", outer])
}

/// A timestamped log of statuses, appended to by one observer.
final class StatusLog: Sendable {
    private let entries = LockedBox<[(NetworkStatus, ContinuousClock.Instant)]>([])
    func append(_ status: NetworkStatus) { entries.withLock { $0.append((status, .now)) } }
    /// The first time at or after `start` that a status matching `predicate` was seen.
    func first(after start: ContinuousClock.Instant, where predicate: (NetworkStatus) -> Bool) -> ContinuousClock.Instant? {
        entries.withLock { $0.first { $0.1 >= start && predicate($0.0) }?.1 }
    }
}

struct Scenario {
    var name: String
    var down: [[String]]
    var up: [[String]]
    var downStatus: NetworkStatus
}

func milliseconds(_ duration: Duration) -> Double { duration.seconds * 1000 }

func summary(_ values: [Double]) -> String {
    guard !values.isEmpty else { return "no detections" }
    let sorted = values.sorted()
    let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    return String(format: "median %7.1f ms   max %7.1f ms   (n=%d)", median, sorted.last!, values.count)
}

setUp()
defer { tearDown() }

let monitor: NetlinkMonitor
do { monitor = try NetlinkMonitor(namespacePath: "/var/run/netns/\(inner)") } catch {
    report("cannot start the monitor: \(error)\n")
    exit(1)
}
let online = NetworkStatus.online(interface: innerLink, family: .ipv4)
let eventLog = StatusLog()
let pollLog = StatusLog()
let stream = monitor.statusUpdates()
let watcher = Task { for await status in stream { eventLog.append(status) } }
let poller = Task {
    while !Task.isCancelled {
        if let status = try? monitor.dumpStatus() { pollLog.append(status) }
        try? await Task.sleep(for: .seconds(1))
    }
}

let scenarios = [
    Scenario(
        name: "carrier (peer link down/up; default route stays)",
        down: [["-n", outer, "link", "set", outerLink, "down"]],
        up: [["-n", outer, "link", "set", outerLink, "up"]],
        downStatus: .offline(.noCarrier)
    ),
    Scenario(
        name: "own link (link down; link up + default route, one `ip -batch`)",
        down: [["-n", inner, "link", "set", innerLink, "down"]],
        up: [["-n", inner, "-batch", "-"]],
        downStatus: .offline(.noLink)
    ),
]

print("reachability-bench: \(flips) flips per scenario, times from starting `ip` to the status change")
for scenario in scenarios {
    var results: [String: [Double]] = [:]
    for _ in 0..<flips {
        for (direction, commands, expected) in [("down", scenario.down, scenario.downStatus), ("up", scenario.up, online)] {
            // A random pause, so flips do not fall into step with the poller's 1 s tick.
            try? await Task.sleep(for: .milliseconds(Int.random(in: 200...1200)))
            let start = ContinuousClock.now
            for command in commands {
                let batch = command.contains("-batch") ? "link set \(innerLink) up\nroute add default via 10.77.0.2\n" : nil
                ip(command, input: batch)
            }
            results["ip \(direction)", default: []].append(milliseconds(.now - start))
            let deadline = start + .seconds(3)
            var event: ContinuousClock.Instant?
            var poll: ContinuousClock.Instant?
            while ContinuousClock.now < deadline && (event == nil || poll == nil) {
                event = event ?? eventLog.first(after: start) { $0 == expected }
                poll = poll ?? pollLog.first(after: start) { $0 == expected }
                try? await Task.sleep(for: .milliseconds(1))
            }
            if let event { results["event \(direction)", default: []].append(milliseconds(event - start)) }
            if let poll { results["polling \(direction)", default: []].append(milliseconds(poll - start)) }
        }
    }
    print("\n\(scenario.name)")
    for key in ["event down", "event up", "polling down", "polling up", "ip down", "ip up"] {
        print("  \(key.padding(toLength: 13, withPad: " ", startingAt: 0)) \(summary(results[key] ?? []))")
    }
}
watcher.cancel()
poller.cancel()
monitor.stop()
