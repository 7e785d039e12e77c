import ArgumentParser
import OfflineQueue

/// `--origin-limit`, `--max-pause` and `--reconnect-spread`, shared by `drain` and `run`: how
/// the queue treats the servers it delivers to (``FlowControl``).
struct FlowOptions: ParsableArguments {
    @Option(name: .customLong("origin-limit"), help: ArgumentHelp(
        "A limit by origin, held by every drainer of the queue: ORIGIN=RATE/s[,burst=N][,concurrency=N] or ORIGIN=concurrency=N. Repeat it for more origins; the limits given replace those stored.",
        valueName: "limit"
    ))
    var originLimits: [String] = []

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
        do {
            for limit in originLimits { _ = try OriginLimit(parsing: limit) }
        } catch {
            throw ValidationError("--origin-limit: \(error)")
        }
    }

    /// The options as the queue's flow control.
    func flow() throws -> FlowControl {
        FlowControl(
            limits: try originLimits.map { text throws(QueueError) in try OriginLimit(parsing: text) },
            maxPause: Seconds.duration(maxPause), reconnectSpread: reconnectSpread.map(Seconds.duration)
        )
    }
}
