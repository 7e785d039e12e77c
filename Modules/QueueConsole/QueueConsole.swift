public import Hummingbird
public import Logging
public import Metrics
public import OfflineQueueCore

/// An operator console for an `OfflineQueue` in the browser: an overview, the entries list,
/// each entry, and the operator's actions, every page with a JSON twin (the same route with
/// `Accept: application/json`). Safe to expose: every request but `/healthz` and the
/// stylesheet needs a user (basic or bearer), read-only users are refused any change before
/// routing, cross-origin changes are refused, every response carries a strict
/// Content-Security-Policy, and every action writes an audit line.
///
/// ```swift
/// let console = QueueConsole(queue: queue, users: try ConsoleUsers(contentsOf: credentialsFile), prefix: "/queue")
/// let app = Application(router: console.router(), configuration: .init(address: .hostname("127.0.0.1", port: 9090)))
/// try await app.runService()
/// ```
public struct QueueConsole: Sendable {
    /// The queue the console shows and acts on.
    public let queue: OfflineQueue
    /// Who may sign in, and in which role.
    public let users: ConsoleUsers
    /// The path every route, link, form and asset starts with: `""`, or `/queue` behind a
    /// reverse proxy that forwards `/queue/…`.
    public let prefix: String
    /// How old the overview's counts may be: one count query per interval however many
    /// viewers poll it (`OfflineQueue.recentCounts(maxAge:)`).
    public let countsMaxAge: Duration
    /// Where the audit lines go (`console action`, with user, action, ids and result).
    public let logger: Logger
    /// The role of a request without `Authorization`, or `nil` (the default) to answer it 401.
    /// For a console bound to a loopback address only, such as `sync console` without users:
    /// even then such a request is refused (403) unless its `Host` is `localhost`, a 127/8
    /// address or `[::1]`, so a page on another site cannot reach it through DNS rebinding.
    public let anonymous: ConsoleRole?
    /// Where sign-ins' password hashes run (off the cooperative pool); tests give their own.
    var passwordChecks = PasswordChecks()

    /// Where the action counts go (`courier_console_actions_total`, by `action` and
    /// `result`); the bootstrapped `MetricsSystem`'s factory when `nil`.
    public let metricsFactory: (any MetricsFactory)?
    /// How many groups and names the overview shows (the rest summed in one line).
    public let overviewTop: Int
    /// How many of the newest entries the overview's groups and names count: a bounded read
    /// however large the queue (`OfflineQueue.recentOverview(maxAge:top:window:)`).
    public let overviewWindow: Int
    /// Where an entry's trace is shown: a URL with `{trace_id}` where the trace's id goes, such
    /// as Jaeger's `https://jaeger.example.com/trace/{trace_id}`; `nil` shows the id without a link.
    public let traceLink: String?

    /// Signs the notices of this console's redirects; a notice without its signature is not shown.
    let notices = NoticeSeal()

    /// The most ids one bulk action takes; a request with more is refused (413).
    public static let bulkLimit = 1_000
    /// How many entries one transaction of a bulk action on every entry a filter matches changes.
    public static let bulkBatch = 500

    /// A console for `queue` that `users` sign in to, served under `prefix` (`queue/`, `/queue/`
    /// and `/queue` all mean `/queue`). The other settings are described on their properties.
    public init(
        queue: OfflineQueue, users: ConsoleUsers, prefix: String = "", countsMaxAge: Duration = .seconds(1), logger: Logger = Logger(label: "courier.console"),
        anonymous: ConsoleRole? = nil, overviewTop: Int = 50, overviewWindow: Int = QueueOverview.defaultWindow,
        metricsFactory: (any MetricsFactory)? = nil, traceLink: String? = nil
    ) {
        self.metricsFactory = metricsFactory
        self.traceLink = traceLink
        self.queue = queue
        self.users = users
        self.prefix = Self.normalized(prefix: prefix)
        self.countsMaxAge = countsMaxAge
        self.logger = logger
        self.anonymous = anonymous
        self.overviewTop = overviewTop
        self.overviewWindow = overviewWindow
    }

    /// `queue/`, `/queue/` and `/queue` all mean `/queue`; `/` and `` mean no prefix.
    static func normalized(prefix: String) -> String {
        let trimmed = prefix.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        return trimmed.isEmpty ? "" : "/" + trimmed
    }

    /// A router serving the console, its middleware installed; add routes of your own (a
    /// `/metrics`) before serving it.
    public func router() -> Router<ConsoleContext> {
        let router = Router(context: ConsoleContext.self)
        addRoutes(to: router)
        return router
    }

    /// Installs the console's middleware and routes on `router`. The middleware applies to
    /// every route of `router`, those added before and after included.
    public func addRoutes(to router: Router<ConsoleContext>) {
        router.add(middleware: SecurityHeadersMiddleware())
        router.add(middleware: CrossOriginMiddleware())
        router.add(middleware: AuthenticationMiddleware(users: users, openPaths: [path("/healthz"), path("/console.css")], anonymous: anonymous, checks: passwordChecks))
        addPageRoutes(to: router)
        addActionRoutes(to: router)
    }

    /// `route` under the prefix.
    func path(_ route: String) -> String { prefix + route }
}
