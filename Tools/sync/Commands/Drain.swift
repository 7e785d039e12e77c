import ArgumentParser
import AsyncHTTPClientTransport
import Foundation
import Logging
import OfflineQueue
import Reachability
#if canImport(Glibc)
import Glibc
#endif

struct Drain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send what is due until nothing more is due.",
        discussion: """
            Exits 0 only when nothing is pending and nothing is in flight, and 75 (EX_TEMPFAIL) \
            otherwise: the network is gone, entries back off after a failure (it says when the \
            next one is due), or another live drainer (a `sync run`, say) is sending some (it \
            says how many, and which process). Entries of a drainer that died are taken back \
            at once and sent. Ctrl-C stops: sends in flight are cancelled and their entries given back. \
            Blocked entries that nothing will release (they wait for each other in a loop, which \
            a queue written by an earlier version may hold) make it exit 65 (EX_DATAERR), after \
            it says which: `sync release --stuck` or `sync purge` settles them. \
            A full disk stops it with 74 (EX_IOERR): it sends nothing more, and records the \
            outcome of what it sent in space kept aside for this, so nothing is sent twice. \
            Log lines go to standard error; --log-level debug adds one per attempt, with its \
            trace_id and span_id. With OTEL_TRACES_EXPORTER=otlp (and the other standard OTEL_* \
            variables) its spans are exported over OTLP/HTTP before it exits (Docs/Observability.md).

            Examples:
              sync drain
              sync drain --concurrency 16 --timeout 10
              sync drain --once --probe-url https://api.example.com/health
              sync --json drain --no-reachability
              sync drain --keyring /etc/courier/queue.keyring    # sealed entries need their keys
              OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 sync drain --log-level debug
            """
    )

    @OptionGroup var options: QueueOptions

    @OptionGroup var sending: SendOptions

    @OptionGroup var flow: FlowOptions

    @Flag(name: .long, help: "Try each due entry at most once.")
    var once = false

    @OptionGroup var network: NetworkOptions

    @OptionGroup var connection: ConnectionOptions

    @OptionGroup var secrets: SecretOptions

    @OptionGroup var logging: LogOptions

    func run() async throws {
        logging.bootstrap()
        // With OTEL_TRACES_EXPORTER=otlp the drain's spans are exported, and flushed before exit.
        try await Telemetry.exporting(logger: Logger(label: "courier.sync")) {
            try await withTransport(configuration: try connection.configuration(connectionsPerHost: sending.connectionsPerHost)) { transport in try await drain(through: transport) }
        }
    }

    private func drain(through transport: AsyncHTTPClientTransport) async throws {
        let monitor = network.makeMonitor(transport: transport)
        await NetworkOptions.settle(monitor)
        let access = QueueAccess(
            transport: transport, monitor: monitor, concurrency: sending.concurrency, timeout: sending.timeoutDuration, flow: try flow.flow(),
            templates: try secrets.templates()
        )
        try await Runner.run(options, access) { queue in
            let due = try await queue.counts().pending
            let progress = options.json ? nil : ProgressBar(total: due)
            let events = queue.events()
            let watcher = Task {
                for await event in events {
                    switch event {
                    case .delivered: progress?.delivered()
                    case .willRetry: progress?.retried()
                    case .deadLettered: progress?.deadLettered()
                    default: break
                    }
                }
            }
            let drain = Task { try await queue.drain(once ? .once : .untilIdle) }
            let interrupts = Interrupts { drain.cancel() }
            defer { interrupts.cancel() }
            let summary: DrainSummary
            do {
                summary = try await drain.value
            } catch let error as QueueError where error.kind == .diskFull {
                // Not the enqueue's "nothing was stored": what was sent is recorded.
                complain("""
                    the disk holding \(error.path ?? options.shownPath) is full: the drain stopped sending, and the outcome \
                    of every request it sent is recorded; the entries it did not send stay \
                    pending (free space, then drain again)
                    """)
                throw SysExit.ioError
            }
            watcher.cancel()
            await watcher.value
            progress?.finish()
            let stuck = summary.stuck > 0 ? try await queue.stuckEntries() : []
            return DrainReport(summary: summary, stuck: stuck, network: monitor.map { "\($0.status)" })
        }
    }
}

/// What `sync drain` prints: what it delivered, what failed and what remains; its exit status
/// says whether anything remains (75) or needs an operator (65).
struct DrainReport: Report {
    var summary: DrainSummary
    var stuck: [EntryID]
    /// The network's status as the monitor saw it, when there is one.
    var network: String?

    enum CodingKeys: String, CodingKey {
        case stuck, delivered, failed, dead, remaining, paused, reclaimed, conflicts, dropped, offline
        case inflightElsewhere = "inflight_elsewhere", nextAttemptAt = "next_attempt_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(stuck, forKey: .stuck)
        try container.encode(summary.delivered, forKey: .delivered)
        try container.encode(summary.failed, forKey: .failed)
        try container.encode(summary.dead, forKey: .dead)
        try container.encode(summary.remaining, forKey: .remaining)
        try container.encode(summary.paused, forKey: .paused)
        try container.encode(summary.inflightElsewhere, forKey: .inflightElsewhere)
        try container.encode(summary.reclaimed, forKey: .reclaimed)
        try container.encode(summary.conflicts, forKey: .conflicts)
        try container.encode(summary.dropped, forKey: .dropped)
        try container.encode(summary.offline, forKey: .offline)
        try container.encode(Timestamp(summary.nextAttemptAt), forKey: .nextAttemptAt)
    }

    func printText() {
        print("delivered \(summary.delivered), failed \(summary.failed) (will retry), dead \(summary.dead), remaining \(summary.remaining)")
        if summary.offline, let network {
            print("the network is not there (\(network)); entries wait for it")
        }
        if summary.reclaimed > 0 {
            print("\(summary.reclaimed) entries were taken back from a drainer that is gone")
        }
        if summary.conflicts > 0 {
            print("\(summary.conflicts) answers were conflicts left for an operator (sync list --state conflict; sync retry or purge)")
        }
        if summary.dropped > 0 {
            print("\(summary.dropped) entries were dropped by the conflict resolver after a conflict")
        }
        if summary.paused > 0 {
            print("\(summary.paused) entries are held by a pause (sync stats shows it; sync resume lifts it)")
        }
        if summary.remaining > summary.paused {
            let next = summary.nextAttemptAt.map { "\(Output.iso($0)) (\(Output.relative($0)))" } ?? "when the network is back"
            print("\(summary.remaining - summary.paused) entries remain; the next is due \(next)")
        }
        if !stuck.isEmpty { print(StuckReport.line(stuck)) }
        if summary.inflightElsewhere > 0 {
            let drainers = summary.otherDrainers.map(Output.drainer).joined(separator: ", ")
            print("\(summary.inflightElsewhere) entries are in flight under another drainer (\(drainers)); it is still sending them")
        }
    }

    func finish() throws {
        // Entries that nothing will release need an operator: trying again later changes nothing.
        if !stuck.isEmpty { throw SysExit.dataError }
        if summary.remaining > 0 || summary.inflightElsewhere > 0 { throw SysExit.tryAgain }
    }
}

/// Calls `handler` on SIGINT or SIGTERM instead of dying, so a drain can give its leases back.
final class Interrupts {
    private let sources: [any DispatchSourceSignal]

    init(_ handler: @escaping @Sendable () -> Void) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
