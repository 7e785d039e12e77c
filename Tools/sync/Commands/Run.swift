import ArgumentParser
import AsyncHTTPClientTransport
import Foundation
import Logging
import Metrics
import OfflineQueue
import Prometheus
import QueueSystemd
import Reachability
import ServiceLifecycle
import UnixSignals

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run background sync: drain whenever something is due and the network is there.",
        discussion: """
            Watches reachability (netlink, plus the probe when given) and drains at once when the \
            network comes back, when an entry comes due (on the boot clock: a wall-clock step \
            moves no wait), and when any process enqueues (a SQLite queue's <db>.wake file, \
            watched with inotify; PostgreSQL's LISTEN); every --poll seconds as a fallback. On SIGTERM or SIGINT it stops taking work, lets sends in flight finish \
            for up to 5 seconds (then cancels them and gives their entries back), and exits 0 within 10 seconds.

            Under systemd (Type=notify) it sends READY=1, STATUS= with the queue's counts (every \
            process's, read at most once a second), STOPPING=1 (with EXTEND_TIMEOUT_USEC= when \
            sends in flight need the grace period) to $NOTIFY_SOCKET, and, with WatchdogSec=, \
            WATCHDOG=1 only while the service is alive: its loop goes round, every send is within \
            its --timeout plus 5 seconds, and every database call within --store-timeout. A hang \
            stops the pings, and systemd restarts the service. Delivered entries older than 7 days \
            are deleted hourly. Logs go to standard error. See Docs/Deployment.md for a unit file.

            With --metrics-address it serves GET /metrics in Prometheus's text format: the \
            courier_queue_* gauges, counters and histograms listed in Docs/OfflineQueue.md.

            Examples:
              sync run
              sync run --metrics-address 9464
              sync run --concurrency 16 --probe-url https://api.example.com/health --log-format json
            """
    )

    @OptionGroup var options: QueueOptions

    @OptionGroup var sending: SendOptions

    @OptionGroup var network: NetworkOptions

    @OptionGroup var secrets: SecretOptions

    @OptionGroup var metrics: MetricsOptions

    @Option(name: .long, help: ArgumentHelp("How often to look for work without being woken, in seconds (a fallback).", valueName: "seconds"))
    var poll: Double = 5

    @Option(name: .long, help: ArgumentHelp(
        "How long one database call may take before the watchdog calls the service stuck, in seconds.", valueName: "seconds"
    ))
    var storeTimeout: Double = 30

    @Option(name: .long, help: "Log lines as logfmt or json.")
    var logFormat: LogFormat = .logfmt

    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        try Seconds.check(poll, option: "--poll")
        try Seconds.check(storeTimeout, option: "--store-timeout")
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level \(logLevel) is not a level") }
    }

    func run() async throws {
        let format = logFormat
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = LineLogHandler(label: label, format: format)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "courier.sync")
        var endpoint: MetricsEndpoint?
        if let address = metrics.address {
            endpoint = try await Self.serveMetrics(at: address, logger: logger)
        }
        try await withTransport { [endpoint] transport in try await serve(through: transport, metrics: endpoint, logger: logger) }
        logger.info("sync run stopped")
    }

    /// Makes Prometheus the process's metrics backend and binds its endpoint, before the queue
    /// opens: a taken port stops `sync run` at once (exit 71), not after it started draining.
    private static func serveMetrics(at address: MetricsAddress, logger: Logger) async throws -> MetricsEndpoint {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["courier_queue_enqueue_to_delivery_seconds"] = QueueMetricsOptions.enqueueToDeliveryBuckets
        MetricsSystem.bootstrap(factory)
        do {
            let endpoint = try await MetricsEndpoint.bind(address, registry: registry)
            logger.info("serving metrics", metadata: ["url": "http://\(endpoint.address)/metrics"])
            return endpoint
        } catch {
            complain("cannot serve metrics on \(address): \(error)")
            throw SysExit.osError
        }
    }

    private func serve(through transport: AsyncHTTPClientTransport, metrics endpoint: MetricsEndpoint?, logger: Logger) async throws {
        let monitor = network.makeMonitor(transport: transport)
        try await reporting {
            try await options.withQueue(
                create: true, transport: transport, monitor: monitor,
                concurrency: sending.concurrency, timeout: sending.timeoutDuration,
                templates: try secrets.templates()
            ) { queue in
                let grace = Duration.seconds(5)
                let notifier = SystemdNotifier()
                let service = queue.service(
                    pollInterval: Seconds.duration(poll), shutdownGrace: grace, storeCallLimit: Seconds.duration(storeTimeout), logger: logger
                )
                var services: [any Service] = [service]
                if let endpoint { services.append(endpoint) }
                if let notifier {
                    services.append(SystemdQueueService(notifier: notifier, service: service, shutdownGrace: grace, logger: logger))
                }
                let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
                logger.info("sync run starting", metadata: [
                    "db": "\(options.shownPath)", "concurrency": "\(sending.concurrency)",
                    "network": "\(monitor.map { "\($0.status)" } ?? "not monitored")",
                ])
                try await group.run()
            }
        }
    }
}
