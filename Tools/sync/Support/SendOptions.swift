import ArgumentParser

/// `--concurrency` and `--timeout`, shared by `drain` and `run`: how many requests are sent at
/// once, and the limit for each.
///
/// The default concurrency, 64, is sized for HTTP/2: AsyncHTTPClient negotiates it by ALPN
/// and carries every request to an origin as a stream of one connection (up to the server's
/// limit, 100 or more on most servers), so a drain to a server 20 ms away can reach 64 / 20 ms
/// = 3,200 requests a second. An HTTP/1.1 origin gets ``connectionsPerHost`` connections
/// (16 at the default): the requests beyond them wait in the client's pool for a free one.
/// What holds an origin back is the queue's flow control, whatever the concurrency: the
/// `--origin-limit` limits held by every drainer, the pause on `Retry-After`, and the halving
/// on 429 and 503 without it (`FlowControl`).
struct SendOptions: ParsableArguments {
    /// `--concurrency` when not given.
    static let defaultConcurrency = 64
    /// The most HTTP/1.1 connections to one host, whatever the concurrency.
    static let maximumConnectionsPerHost = 16

    @Option(name: .long, help: """
        How many requests are sent at once (one per group). The default suits HTTP/2, which carries them as streams of one \
        connection; an HTTP/1.1 host gets at most 16 connections (fewer when the concurrency is lower), and the requests \
        beyond them wait for one.
        """)
    var concurrency: Int = SendOptions.defaultConcurrency

    @Option(name: .long, help: ArgumentHelp("The limit for one request, in seconds.", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        try Seconds.check(timeout, option: "--timeout")
    }

    /// `--timeout` (checked) as a duration.
    var timeoutDuration: Duration { Seconds.duration(timeout) }

    /// The HTTP/1.1 connections the transport opens to one host: as many as the concurrency,
    /// at most ``maximumConnectionsPerHost`` (HTTP/2 uses one connection per host whatever this is).
    var connectionsPerHost: Int { min(concurrency, Self.maximumConnectionsPerHost) }
}
