import ArgumentParser

/// `--concurrency` and `--timeout`, shared by `drain` and `run`: how many requests are sent at
/// once, and the limit for each.
struct SendOptions: ParsableArguments {
    @Option(name: .long, help: "How many requests are sent at once (one per group).")
    var concurrency: Int = 8

    @Option(name: .long, help: ArgumentHelp("The limit for one request, in seconds.", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        try Seconds.check(timeout, option: "--timeout")
    }

    /// `--timeout` (checked) as a duration.
    var timeoutDuration: Duration { Seconds.duration(timeout) }
}
