import ArgumentParser
import AsyncHTTPClientTransport
import Hummingbird
import Foundation
import Logging
import Metrics
import OfflineQueue
import Prometheus
import QueueConsole
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

            With OTEL_TRACES_EXPORTER=otlp (and the other standard OTEL_* variables) it exports \
            its spans over OTLP/HTTP, each attempt's continuing the trace its entry was enqueued \
            in, and flushes them as it stops; --log-level debug logs a line per attempt with its \
            trace_id and span_id (Docs/Observability.md).

            With --metrics-address it serves GET /metrics in Prometheus's text format: the \
            courier_queue_* gauges, counters and histograms listed in Docs/OfflineQueue.md.

            With --console it serves the operator console (Docs/Console.md) at that address, and \
            GET /metrics on the same server, behind the console's users (--credentials FILE, \
            else $CREDENTIALS_DIRECTORY/courier-console); without users only on a loopback address.

            Examples:
              sync run
              sync run --metrics-address 9464
              sync run --console 127.0.0.1:9090
              sync run --concurrency 16 --probe-url https://api.example.com/health --log-format json
            """
    )

    @OptionGroup var options: QueueOptions

    @OptionGroup var sending: SendOptions

    @OptionGroup var flow: FlowOptions

    @OptionGroup var network: NetworkOptions

    @OptionGroup var connection: ConnectionOptions

    @OptionGroup var secrets: SecretOptions

    @OptionGroup var metrics: MetricsOptions

    @Option(name: .long, help: ArgumentHelp(
        "Serve the operator console, and /metrics beside it, at this address: HOST:PORT, [IPv6]:PORT, or a bare PORT for 127.0.0.1. Off unless given.",
        valueName: "address"
    ))
    var console: String?

    @OptionGroup var consoleOptions: ConsoleOptions

    @Option(name: .long, help: ArgumentHelp("How often to look for work without being woken, in seconds (a fallback).", valueName: "seconds"))
    var poll: Double = 5

    @Option(name: .long, help: ArgumentHelp(
        "How long one database call may take before the watchdog calls the service stuck, in seconds.", valueName: "seconds"
    ))
    var storeTimeout: Double = 30

    @OptionGroup var logging: LogOptions

    func validate() throws {
        if let console, ListenAddress(console) == nil {
            throw ValidationError("--console \(console.debugDescription) is not HOST:PORT, [IPv6]:PORT or a port (0 to 65535)")
        }
        try Seconds.check(poll, option: "--poll")
        try Seconds.check(storeTimeout, option: "--store-timeout")
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "courier.sync")
        // Checked before the queue opens: missing or malformed users, or a console on the
        // network without users, stop `sync run` at once.
        let consoleAddress = self.console.flatMap(ListenAddress.init)
        var users: ConsoleUsers?
        if let consoleAddress {
            let loaded = try consoleOptions.loadUsers()
            try ConsoleOptions.checked(users: loaded, address: consoleAddress, option: "--console")
            users = loaded
        }
        let registry = metrics.address != nil || consoleAddress != nil ? HTTPServer.bootstrapPrometheus() : nil
        let telemetry = try Telemetry.bootstrap(logger: logger)
        try await withTransport(configuration: try connection.configuration(connectionsPerHost: sending.connectionsPerHost)) { [users, registry] transport in
            try await serve(
                through: transport, console: consoleAddress.flatMap { address in users.map { (address, $0) } }, registry: registry,
                telemetry: telemetry, logger: logger
            )
        }
        logger.info("sync run stopped")
    }

    /// The HTTP servers asked for: the console with /metrics beside it at `--console`, and
    /// /metrics alone at `--metrics-address` (unless that is the console's address).
    private func servers(queue: OfflineQueue, console: (ListenAddress, ConsoleUsers)?, registry: PrometheusCollectorRegistry?, logger: Logger) -> [any Service] {
        var servers: [any Service] = []
        if let (address, users) = console {
            let queueConsole = consoleOptions.console(queue: queue, users: users, logger: Logger(label: "courier.console"))
            let router = queueConsole.router()
            var announcements = [(message: "serving the console", path: queueConsole.prefix + "/")]
            if let registry {
                HTTPServer.addMetrics(to: router, registry: registry)
                announcements.append(("serving metrics", "/metrics"))
            }
            if users.isEmpty {
                logger.notice("the console has no users: anyone who can connect to \(address) may act on the queue")
            }
            servers.append(HTTPServer(router: router, address: address, what: "the console", announcements: announcements, logger: logger))
        }
        if let address = metrics.address, let registry, address != console?.0 {
            let router = Router(context: ConsoleContext.self)
            HTTPServer.addMetrics(to: router, registry: registry)
            servers.append(HTTPServer(router: router, address: address, what: "metrics", announcements: [("serving metrics", "/metrics")], logger: logger))
        }
        return servers
    }

    private func serve(
        through transport: AsyncHTTPClientTransport, console: (ListenAddress, ConsoleUsers)?, registry: PrometheusCollectorRegistry?,
        telemetry: (any Service)?, logger: Logger
    ) async throws {
        let monitor = network.makeMonitor(transport: transport)
        let access = QueueAccess(
            create: true, transport: transport, monitor: monitor, concurrency: sending.concurrency, timeout: sending.timeoutDuration,
            flow: try flow.flow(), templates: try secrets.templates()
        )
        try await Runner.serve(options, access) { queue in
            let grace = Duration.seconds(5)
            let notifier = SystemdNotifier()
            let service = queue.service(
                pollInterval: Seconds.duration(poll), shutdownGrace: grace, storeCallLimit: Seconds.duration(storeTimeout), logger: logger
            )
            // The exporter first: a group stops its services in reverse order, so it stops
            // last and flushes the spans of the sends the queue service let finish.
            var services: [any Service] = telemetry.map { [$0] } ?? []
            services.append(service)
            services += servers(queue: queue, console: console, registry: registry, logger: logger)
            if let notifier {
                services.append(SystemdQueueService(notifier: notifier, service: service, shutdownGrace: grace, logger: logger))
            }
            let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            logger.info("sync run starting", metadata: [
                "db": "\(options.shownPath)", "concurrency": "\(sending.concurrency)", "connections_per_host": "\(sending.connectionsPerHost)",
                "network": "\(monitor.map { "\($0.status)" } ?? "not monitored")",
            ])
            try await group.run()
        }
    }
}
