package import Foundation
public import HTTPCore
import HTTPTypes
public import Reachability

/// A durable queue of HTTP requests: requests made while the network is gone are stored and
/// sent, with backoff, when it is back; a crash, a kill or a reboot loses none. The engine lives
/// here, in `OfflineQueueCore`, and each store in a module of its own: the rows live in a SQLite
/// file (`init(configuration:client:monitor:)`, from `OfflineQueue`, which re-exports this
/// module), in PostgreSQL (`OfflineQueue.open` with a `postgres://` URL, from
/// `OfflineQueuePostgres`), or in memory for tests (`OfflineQueue.inMemory`, from
/// `CourierTesting`).
///
/// ```swift
/// let queue = try OfflineQueue(
///     configuration: QueueConfiguration(path: "/var/lib/myapp/queue.db"),
///     client: client,                  // its plugins run again at every replay
///     monitor: try NetlinkMonitor()
/// )
/// switch try await queue.send(EventsAPI.post(event)) {
/// case .sent(let response): print("sent:", response.status)
/// case .queued(let ticket): print("queued as", ticket.id)
/// }
/// ```
///
/// Delivery is at least once: each attempt carries the entry's idempotency key (header
/// `Idempotency-Key` unless configured) so the server can apply it exactly once. See
/// `Docs/OfflineQueue.md` for the policy, the ordering rules and the schema.
public final class OfflineQueue: Sendable {
    /// The queue's configuration.
    public let configuration: QueueConfiguration
    /// Where the network status comes from; `nil` sends whenever asked.
    public let monitor: (any NetworkMonitor)?
    /// The client enqueues build requests with: the caller's, without its retry policy (the
    /// queue retries).
    let client: APIClient
    /// The caller's client as given, for sends made online through ``send(_:options:)``.
    let callerClient: APIClient
    /// Where the entries live: any of the stores (``QueueStorage``). Opening and closing use
    /// the whole store; each part of the engine uses only its role of it, below.
    package let store: any QueueStorage
    /// The drain's role (claims, sends, settlements), over the store as the drain sees it.
    let drainer: QueueDrainer
    /// The store as an enqueue sees it: inserts and bodies.
    let enqueueStore: any QueueEnqueueStorage
    /// The operator's role (lookups, counts, the overview, retries, purges, pauses), over the
    /// store as people and `sync` see it.
    let operations: QueueOperations
    /// The upkeep's role (retention, orphan bodies, integrity), over the store as its upkeep
    /// sees it.
    let upkeep: QueueUpkeep
    /// The store as the seal gate sees it: the keys the entries use.
    let sealStore: any QueueSealStorage
    /// The re-sealing's role (key rotation, sealing entries stored in clear).
    let resealer: QueueResealer
    let sealGate = SealGate()
    /// Whether this queue stored its configured limits by origin (``FlowControl/limits``): once,
    /// at its first drain, not at every drain.
    let flowLimitsStored = LockedBox(false)
    /// What the sends may hold of sealed bodies' verified plaintext (``QueueSealing/verifiedBodyMemory``).
    package var verifiedBodyMemory: VerifiedBodyMemory { drainer.verifiedBodyMemory }
    let broadcast = EventBroadcast()
    /// Fired by this process's enqueues, retries and resumes, and by the store when another
    /// process enqueues where it can tell (``QueueDrainStorage/observeRemoteEnqueues(_:)``), so a
    /// running service drains at once.
    let enqueued = WakeSignal()
    /// Enqueued URLs checked once (see ``parse(_:)``).
    let enqueueTargets = ParsedURLs { text throws(QueueError) in try EnqueueTarget(text) }
    /// Counters, timers and gauges, through swift-metrics.
    let metrics: QueueMetrics
    /// The sends and store calls under way, for a service's watchdog, on the queue's clock.
    let watch: ServiceWatch
    /// What this process counted for the activity per minute and has not yet stored.
    let activityBook: ActivityBook
    /// The origins' circuits as this process knows them (``OriginHealth``): for
    /// ``circuitGate(scope:)`` and ``send(_:options:)``.
    let circuits: OriginCircuits
    /// Names this drainer in leases (`host:pid:token:boot` on SQLite, `host:pid:pgN` on
    /// PostgreSQL).
    var owner: String { drainer.store.owner }
    /// Where the rows live, for messages: a file path, or a database URL without its password.
    package let location: String

    /// A queue over `storage`, any of the stores (see ``QueueStorage``): each store's module
    /// opens its store and hands it here, with where its rows live for messages (`location`:
    /// a file path, or a database URL without its password).
    package init(storage: any QueueStorage, location: String, configuration: QueueConfiguration, client: APIClient, monitor: (any NetworkMonitor)?) {
        self.location = location
        self.configuration = configuration
        self.monitor = monitor
        var clientConfiguration = client.configuration
        clientConfiguration.retryPolicy = .none
        // The queue's own sends include its probes: a circuit gate the app gave its client
        // (``OriginHealth/CircuitGate``) is for the app's calls, not for them.
        clientConfiguration.plugins.removeAll { $0 is OriginHealth.CircuitGate }
        let replays = APIClient(configuration: clientConfiguration, transport: client.transport)
        self.client = replays
        self.callerClient = client
        self.store = storage
        self.enqueueStore = storage
        self.sealStore = storage
        self.resealer = QueueResealer(store: storage, clock: configuration.clock, bodies: storage, reader: storage, inlineLimit: configuration.inlineBodyLimit)
        let metrics = QueueMetrics(configuration.metrics)
        self.metrics = metrics
        let watch = ServiceWatch(clock: configuration.clock)
        self.watch = watch
        let activityBook = ActivityBook(store: storage, clock: configuration.clock)
        self.activityBook = activityBook
        self.operations = QueueOperations(
            store: storage, clock: configuration.clock, wake: enqueued, watch: watch, metrics: metrics, activityBook: activityBook
        )
        self.upkeep = QueueUpkeep(store: storage, clock: configuration.clock, deliveredRetention: configuration.deliveredRetention)
        let operations = self.operations
        let circuits = OriginCircuits(clock: configuration.clock) { () async throws(QueueError) in try await operations.originFlows() }
        self.circuits = circuits
        self.drainer = QueueDrainer(
            configuration: configuration, monitor: monitor, client: replays, store: storage,
            broadcast: broadcast, metrics: metrics, watch: watch, activityBook: activityBook, circuits: circuits
        )
        storage.observeRemoteEnqueues { [enqueued] in enqueued.fire() }
    }

    /// Lets go of the store's connections (a PostgreSQL queue's). For a SQLite queue, waits for
    /// the work already handed to the file, which then closes with the last reference, so a
    /// process that ends right after leaves no `-wal` or `-shm` behind. First it stores what
    /// this process counted for ``activity(minutes:)`` and has not stored yet. The queue is not
    /// used afterwards.
    public func close() async {
        // What this process counted for the activity per minute and has not stored yet.
        try? await activityBook.flush()
        await store.shutDown()
    }

    // MARK: - Sending and enqueueing

    /// Sends `endpoint` now when the network is there; stores it when the monitor says the
    /// network is gone, or when the send fails because it is.
    ///
    /// The send goes through the client as given, with its retry policy. Other failures (a
    /// 4xx, a 5xx, a timeout) are thrown, as ``SendError/network(_:)``: the caller was online
    /// and can decide. Use ``enqueue(_:options:)`` to hand a request to the queue
    /// unconditionally.
    ///
    /// Header templates (``HeaderTemplates``) resolve for a send made now exactly as for a
    /// replay: only for the origins ``QueueConfiguration/templates`` allows, and the resolved
    /// value is a credential field, dropped by a redirect that leaves the origin. A request
    /// stored because the network was gone keeps the template, never the value.
    ///
    /// - Throws: ``SendError/network(_:)`` for a call that failed online (as any
    ///   `APIClient` call would) or that the client cannot build; ``SendError/template(_:)``
    ///   when a template may not go to the endpoint's origin, or its variable or credential is
    ///   missing (nothing is sent and nothing stored); ``SendError/queue(_:)`` when the network
    ///   was gone and storing failed.
    ///
    /// With ``OriginHealth/storesWhileOpen``, a request to an origin whose circuit is open (the
    /// queue knows its server is unwell) is stored without being tried, as when the network is
    /// gone; so is one a ``circuitGate(scope:)`` in the client refused.
    public func send(_ endpoint: some Endpoint, options: EnqueueOptions = EnqueueOptions()) async throws(SendError) -> SendOutcome {
        if let monitor, !monitor.status.isOnline {
            return .queued(try await storing(endpoint, options: options))
        }
        let live = try resolvingTemplates(endpoint)
        if configuration.flow.health.storesWhileOpen, try await originIsOpen(live) {
            return .queued(try await storing(endpoint, options: options))
        }
        do {
            return .sent(try await callerClient.data(live))
        } catch where isNetworkGone(error) {
            return .queued(try await storing(endpoint, options: options))
        } catch .underlying(let refused) where refused is OriginHealth.CircuitOpen && configuration.flow.health.storesWhileOpen {
            return .queued(try await storing(endpoint, options: options))
        } catch {
            throw .network(error)
        }
    }

    /// Whether the queue knows the origin of `endpoint` is unwell (its circuit is open).
    private func originIsOpen(_ endpoint: some Endpoint) async throws(SendError) -> Bool {
        let url: String?
        do {
            url = try callerClient.request(for: endpoint).url?.absoluteString
        } catch {
            throw .network(error)
        }
        guard let url, let origin = FlowOrigin.key(ofURL: url) else { return false }
        return await circuits.open(String(origin)) != nil
    }

    /// ``enqueue(_:options:)`` for ``send(_:options:)``.
    private func storing(_ endpoint: some Endpoint, options: EnqueueOptions) async throws(SendError) -> Ticket {
        do {
            return try await enqueue(endpoint, options: options)
        } catch {
            throw .queue(error)
        }
    }

    /// `endpoint` with its header templates (and the client's default headers' templates)
    /// resolved for its origin; `endpoint` itself when it has none.
    private func resolvingTemplates<E: Endpoint>(_ endpoint: E) throws(SendError) -> any Endpoint {
        let defaults = callerClient.configuration.defaultHeaders
        let templated = { (fields: HTTPFields) in fields.contains { HeaderTemplates.containsPlaceholder($0.value) } }
        guard templated(endpoint.headers) || templated(defaults) else { return endpoint }
        let origin: Origin?
        do {
            origin = try callerClient.request(for: endpoint).url.flatMap(Origin.init)
        } catch {
            throw .network(error)
        }
        var headers = HTTPFields()
        var credentials: Set<HTTPField.Name> = []
        // The endpoint's fields replace the defaults of the same name, as the client does.
        let own = Set(endpoint.headers.map(\.name))
        let templatedDefaults = defaults.filter { !own.contains($0.name) && HeaderTemplates.containsPlaceholder($0.value) }
        for field in Array(endpoint.headers) + templatedDefaults {
            let value: String
            do {
                value = try configuration.templates.resolve(field.value, for: origin)
            } catch {
                throw .template(error)
            }
            if value != field.value { credentials.insert(field.name) }
            headers.append(HTTPField(name: field.name, value: value))
        }
        return TemplatesResolved(base: endpoint, headers: headers, credentials: credentials)
    }

    /// Stores `endpoint` as the client would build it, before plugins run, to be sent by a
    /// drain.
    ///
    /// The entry is named by the endpoint's `HTTPCore.Endpoint.name` when the endpoint gives
    /// one of its own; one that keeps `HTTPCore.Endpoint.defaultName`, whose path may carry
    /// ids, is named by the method and the origin (`POST https://api.example.com`), as a request
    /// given as text is.
    ///
    /// - Throws: ``QueueError/invalidRequest(_:)`` when the client cannot build the request
    ///   (a malformed URL, a body that does not encode; the reason gives the client's
    ///   `NetworkError`), or what ``enqueue(_:)`` throws.
    public func enqueue(_ endpoint: some Endpoint, options: EnqueueOptions = EnqueueOptions()) async throws(QueueError) -> Ticket {
        let request: PreparedRequest
        do {
            request = try client.request(for: endpoint)
        } catch {
            throw .invalidRequest("the client cannot build it: \(error)")
        }
        // The default name carries the concrete path (an id per entry): the entry takes the
        // queue's default instead, which names the origin.
        let name = endpoint.name
        let given = name == endpoint.defaultName ? nil : name
        return try await enqueue(request, scopes: endpoint.scopes.map(\.name).sorted(), name: given, options: options)
    }

    /// Stores a prepared request, named `name` (logs, the `endpoint` label of the queue's
    /// metrics) or, when `nil`, by its method and origin (`POST https://api.example.com`).
    public func enqueue(_ request: PreparedRequest, scopes: [String] = [], name: String? = nil, options: EnqueueOptions = EnqueueOptions()) async throws(QueueError) -> Ticket {
        try await enqueue([QueuedRequest(request, scopes: scopes, name: name, options: options)])[0]
    }

    /// Stores a request given as text, as a shell tool receives it, named `name` or, when
    /// `nil`, by its method and origin (`POST https://api.example.com`).
    ///
    /// - Throws: ``QueueError/invalidRequest(_:)`` for an invalid method, URL or header.
    public func enqueue(
        method: String,
        url: String,
        headers: [(name: String, value: String)] = [],
        body: RequestBody? = nil,
        name: String? = nil,
        options: EnqueueOptions = EnqueueOptions()
    ) async throws(QueueError) -> Ticket {
        try await enqueue([QueuedRequest(method: method, url: url, headers: headers, body: body, name: name, options: options)])[0]
    }

    /// Stores several requests in one transaction: all or none.
    public func enqueue(_ requests: [QueuedRequest]) async throws(QueueError) -> [Ticket] {
        try await admit(requests, into: enqueueStore, announcing: true)
    }

    // MARK: - Looking and changing

    /// A stream of what happens in this process's queue from now on. Each call returns a new
    /// stream; it ends when the caller stops iterating.
    public func events(bufferingPolicy: AsyncStream<QueueEvent>.Continuation.BufferingPolicy = .unbounded) -> AsyncStream<QueueEvent> {
        broadcast.stream(bufferingPolicy: bufferingPolicy)
    }

    /// The entry with `id`, or `nil`.
    public func entry(_ id: EntryID) async throws(QueueError) -> QueueEntry? { try await operations.entry(id) }

    /// The entries `id` waits for (``EnqueueOptions/after``) and those that wait for it.
    public func dependencies(of id: EntryID) async throws(QueueError) -> EntryDependencies {
        try await operations.dependencies(of: id)
    }

    /// The entry with this idempotency key, or `nil`.
    public func entry(idempotencyKey: String) async throws(QueueError) -> QueueEntry? {
        try await operations.entry(idempotencyKey: idempotencyKey)
    }

    /// Entries matching `filter`, oldest first.
    public func entries(_ filter: EntryFilter = EntryFilter()) async throws(QueueError) -> [QueueEntry] {
        try await operations.entries(filter)
    }

    /// A page of the entries matching `filter`, the store examining at most `scanLimit` rows of
    /// the filter's states past ``EntryFilter/after`` (at least the filter's limit): a filter by
    /// group, name or origin that matches few rows still makes a bounded query. The page then
    /// holds fewer entries than the limit and says where the next one starts.
    public func entryPage(_ filter: EntryFilter, scanLimit: Int) async throws(QueueError) -> EntryPage {
        try await operations.entryPage(filter, scanLimit: scanLimit)
    }

    /// How many entries `selection` matches (every state when it names none; its `limit` is
    /// ignored), and the newest of them.
    public func count(matching selection: EntrySelection) async throws(QueueError) -> SelectionCount {
        try await operations.count(matching: selection)
    }

    /// How many entries are in each state, the oldest pending and the next due time.
    public func counts() async throws(QueueError) -> QueueCounts { try await operations.counts() }

    /// Makes these entries due now with a fresh attempt budget: pending, dead and conflict
    /// entries. Delivered ones are done, blocked ones wait for their parents and superseded ones
    /// are never sent: those are left as they are.
    ///
    /// - Throws: ``QueueError/noSuchEntry(_:)`` or ``QueueError/entryInFlight(_:)``; then
    ///   nothing changed.
    @discardableResult
    public func retry(_ ids: [EntryID]) async throws(QueueError) -> [EntryID] { try await operations.retry(ids) }

    /// Makes every dead entry due now with a fresh attempt budget.
    @discardableResult
    public func retryDead() async throws(QueueError) -> [EntryID] { try await operations.retry(nil) }

    /// Deletes entries and their bodies; returns how many.
    @discardableResult
    public func purge(_ selection: PurgeSelection) async throws(QueueError) -> Int { try await operations.purge(selection) }

    /// Removes bodies kept apart that no entry references, left by a crash between storing a
    /// body and committing its entry.
    public func sweepOrphanBodies() async throws(QueueError) { try await upkeep.sweepOrphanBodies() }

    /// The store's consistency check (`PRAGMA integrity_check` on SQLite): `["ok"]` when sound.
    public func integrityCheck() async throws(QueueError) -> [String] { try await upkeep.integrityCheck() }

    /// Whether `error` only says the network is gone (``QueueDrainer/isNetworkGone(_:monitor:)``).
    func isNetworkGone(_ error: any Error) -> Bool { QueueDrainer.isNetworkGone(error, monitor: monitor) }
}

extension RequestBody {
    /// The body's bytes when it fits in a row of `limit` bytes; `nil` when it is kept apart.
    package func inlined(limit: Int) async throws(QueueError) -> Data? {
        if case .data(let data) = source, data.count <= limit { return data }
        guard let length, length <= limit else { return nil }
        do {
            return try await collect(upTo: limit)
        } catch {
            throw .invalidRequest("cannot read the body: \(error)")
        }
    }
}
