import ArgumentParser
import Foundation
import HTTPCore
import OfflineQueue

/// `--origin-limit`, `--origin-limit-file`, `--max-pause`, `--reconnect-spread`, `--open-after`, `--probe-interval` and
/// `--max-probe-interval`, shared by `drain` and `run`: how the queue treats the servers it delivers to (``FlowControl``,
/// ``OriginHealth``).
struct FlowOptions: ParsableArguments {
    @Option(name: .customLong("origin-limit"), help: ArgumentHelp(
        "A limit by origin, held by every drainer of the queue: ORIGIN=RATE/s[,burst=N][,concurrency=N][,open-after=N], ORIGIN=concurrency=N or ORIGIN=open-after=N (an origin's own threshold for its circuit). Repeat it for more origins; the limits given replace those stored.",
        valueName: "limit"
    ))
    var originLimits: [String] = []

    @Option(name: .customLong("origin-limit-file"), help: ArgumentHelp(
        "A file of limits by origin, one ORIGIN=RATE/s[,burst=N][,concurrency=N][,open-after=N] a line (# starts a comment), as --origin-limit takes them; an --origin-limit for the same origin wins.",
        valueName: "path"
    ))
    var originLimitFile: String?

    @Option(name: .customLong("max-pause"), help: ArgumentHelp("The longest a Retry-After pauses an origin, in seconds.", valueName: "seconds"))
    var maxPause: Double = 3600

    @Option(name: .customLong("reconnect-spread"), help: ArgumentHelp(
        "Wait a random delay up to this many seconds (drawn once per host) before the first drain after the network returns: for fleets of devices. Off unless set.",
        valueName: "seconds"
    ))
    var reconnectSpread: Double?

    @Option(name: .customLong("open-after"), help: ArgumentHelp(
        "An origin's circuit opens after this many answers in a row that say its server is unwell (5xx but 501 and 505, resets, refused connections, timeouts), with no delivery between: its entries then wait, spending no attempt, while one probe at a time for the whole fleet finds out when it is back. 0: never.",
        valueName: "count"
    ))
    var openAfter: Int = OriginHealth().openAfter

    @Option(name: .customLong("probe-interval"), help: ArgumentHelp(
        "The wait before an open circuit's first probe, in seconds; it doubles after each probe that fails, up to --max-probe-interval.",
        valueName: "seconds"
    ))
    var probeInterval: Double = OriginHealth().probeInterval.seconds

    @Option(name: .customLong("max-probe-interval"), help: ArgumentHelp("The longest wait between an open circuit's probes, in seconds.", valueName: "seconds"))
    var maxProbeInterval: Double = OriginHealth().maxProbeInterval.seconds

    func validate() throws {
        try Seconds.check(maxPause, option: "--max-pause")
        guard openAfter >= 0 else { throw ValidationError("--open-after must be 0 (never) or more, not \(openAfter)") }
        try Seconds.check(probeInterval, option: "--probe-interval")
        try Seconds.check(maxProbeInterval, option: "--max-probe-interval")
        guard maxProbeInterval >= probeInterval else { throw ValidationError("--max-probe-interval must be at least --probe-interval") }
        if let reconnectSpread { try Seconds.check(reconnectSpread, option: "--reconnect-spread") }
        _ = try limits()
    }

    /// The file's limits, then the options' (so that an option replaces the file's limit for
    /// its origin).
    func limits() throws -> [FlowControl.OriginLimit] {
        var limits: [FlowControl.OriginLimit] = []
        if let originLimitFile {
            let text: String
            do {
                text = try String(contentsOfFile: originLimitFile, encoding: .utf8)
            } catch {
                throw ValidationError("--origin-limit-file: cannot read \(originLimitFile): \(error.localizedDescription)")
            }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let content = line.prefix { $0 != "#" }.trimmingCharacters(in: .whitespaces)
                guard !content.isEmpty else { continue }
                do {
                    limits.append(try FlowControl.OriginLimit(parsing: content))
                } catch {
                    throw ValidationError("--origin-limit-file: \(originLimitFile), line \(number + 1): \(error)")
                }
            }
        }
        do {
            for text in originLimits { limits.append(try FlowControl.OriginLimit(parsing: text)) }
        } catch {
            throw ValidationError("--origin-limit: \(error)")
        }
        return limits
    }

    /// The options as the queue's flow control.
    func flow() throws -> FlowControl {
        FlowControl(
            limits: try limits(), maxPause: Seconds.duration(maxPause), reconnectSpread: reconnectSpread.map(Seconds.duration),
            health: OriginHealth(openAfter: openAfter, probeInterval: Seconds.duration(probeInterval), maxProbeInterval: Seconds.duration(maxProbeInterval))
        )
    }
}
