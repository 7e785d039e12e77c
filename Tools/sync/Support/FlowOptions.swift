import ArgumentParser
import Foundation
import OfflineQueue

/// `--origin-limit`, `--origin-limit-file`, `--max-pause` and `--reconnect-spread`, shared by `drain` and `run`: how
/// the queue treats the servers it delivers to (``FlowControl``).
struct FlowOptions: ParsableArguments {
    @Option(name: .customLong("origin-limit"), help: ArgumentHelp(
        "A limit by origin, held by every drainer of the queue: ORIGIN=RATE/s[,burst=N][,concurrency=N] or ORIGIN=concurrency=N. Repeat it for more origins; the limits given replace those stored.",
        valueName: "limit"
    ))
    var originLimits: [String] = []

    @Option(name: .customLong("origin-limit-file"), help: ArgumentHelp(
        "A file of limits by origin, one ORIGIN=RATE/s[,burst=N][,concurrency=N] a line (# starts a comment), as --origin-limit takes them; an --origin-limit for the same origin wins.",
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

    func validate() throws {
        try Seconds.check(maxPause, option: "--max-pause")
        if let reconnectSpread { try Seconds.check(reconnectSpread, option: "--reconnect-spread") }
        _ = try limits()
    }

    /// The file's limits, then the options' (so that an option replaces the file's limit for
    /// its origin).
    func limits() throws -> [OriginLimit] {
        var limits: [OriginLimit] = []
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
                    limits.append(try OriginLimit(parsing: content))
                } catch {
                    throw ValidationError("--origin-limit-file: \(originLimitFile), line \(number + 1): \(error)")
                }
            }
        }
        do {
            for text in originLimits { limits.append(try OriginLimit(parsing: text)) }
        } catch {
            throw ValidationError("--origin-limit: \(error)")
        }
        return limits
    }

    /// The options as the queue's flow control.
    func flow() throws -> FlowControl {
        FlowControl(limits: try limits(), maxPause: Seconds.duration(maxPause), reconnectSpread: reconnectSpread.map(Seconds.duration))
    }
}
