import Foundation
import HTTPCore
import Logging
import NIOCore
import OfflineQueueCore
import PostgresNIO

/// The PostgreSQL store (``QueueStorage``): one queue shared by every host that opens the same
/// database and schema.
///
/// - **Claims** pick and mark due entries in one statement, `FOR UPDATE SKIP LOCKED`: two
///   drainers never hold one entry, and an earlier open entry of a group keeps the group's
///   later entries unclaimable, whoever holds it.
/// - **Owner liveness.** Each drainer takes a number from `<schema>.drainer_id` and holds the
///   advisory lock (`hashtext('courier:<schema>')`, number) on a connection of its own for as
///   long as it lives. The lock dies with that connection: a killed process, a cut connection
///   or `pg_terminate_backend` frees it, and the next claim by any drainer takes the entries
///   back at once. A drainer that lost its connection takes a new number; entries it claimed
///   under its old number are still its own to settle until someone takes them back.
/// - **Wake-ups.** Every enqueue sends `NOTIFY` on `<schema>.enqueued` in its transaction; the
///   drainer's own connection listens, so a commit anywhere wakes every idle drainer.
/// - **Time** is the fleet's: the server's clock, read once per boot and carried forward by
///   this host's boot clock (``FleetClock``).
final class PostgresQueueStore: QueueStoreParts {
    let place: PostgresLocation
    let client: PostgresClient
    let logger: Logger
    let readOnly: Bool
    /// `"schema"`, quoted, for statements.
    let schema: String
    /// The `LISTEN`/`NOTIFY` channel.
    let channel: String
    /// The advisory lock's first key is `hashtext` of this.
    let lockName: String
    /// A drain's commit: the call of the schema's `settle_and_claim`.
    let commitCall: String
    /// One per process: every store of the process compares times on the same reading.
    let clock = FleetClock.shared
    private let running: Task<Void, Never>
    private let starting: LockedBox<Start>
    private struct Start {
        var began = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let session = LockedBox<OwnerSession?>(nil)
    /// Every drainer number this store held: settlements of entries claimed under an earlier
    /// one (before a reconnect) are still this drainer's.
    private let numbers = LockedBox<[Int64]>([])
    private let wake = LockedBox<(@Sendable () -> Void)?>(nil)
    /// What waits on a connection, failed when it closes.
    let closes = CloseWatch()
    /// Those awaiting outcomes, and the connection that listens for them while there are any.
    let settledObservers = SettlementObservers()
    let settledListener = LockedBox<SettledListener?>(nil)

    /// Bodies are kept in chunks of this many bytes.
    static let chunkSize = 256 * 1024

    var location: String { place.redacted }
    var owner: String { session.current?.name ?? "" }
    /// The drainer numbers whose claims this store may settle.
    var heldNumbers: [Int64] { numbers.current }
    /// The number of the live session, `-1` when there is none or its connection was cut (a
    /// drainer that lost its lock claims nothing until it takes a new one).
    var currentNumber: Int64 {
        guard let current = session.current, !current.connection.isClosed else { return -1 }
        return current.number
    }

    private init(place: PostgresLocation, client: PostgresClient, logger: Logger, readOnly: Bool) {
        self.place = place
        self.client = client
        self.logger = logger
        self.readOnly = readOnly
        schema = "\"\(place.schema)\""
        channel = place.schema + ".enqueued"
        lockName = "courier:" + place.schema
        commitCall = "SELECT * FROM \"\(place.schema)\".settle_and_claim(" + (1...28).map { "$\($0)" }.joined(separator: ", ") + ")"
        let starting = LockedBox(Start())
        self.starting = starting
        running = Task {
            let waiter = starting.withLock { state in
                state.began = true
                return state.waiter
            }
            waiter?.resume()
            await client.run()
        }
    }

    deinit {
        running.cancel()
        session.current?.end()
    }

    /// Connects, creates or migrates the schema (unless `create` is off, then it must exist),
    /// and starts the connection pool.
    ///
    /// - Throws: ``QueueError/unavailable(location:reason:)`` when the server cannot be
    ///   reached, ``QueueError/newerSchema(path:found:supported:)``,
    ///   ``QueueError/databaseMissing(path:)`` without `create` for a schema never made.
    ///
    /// `durability` ``QueueDurability/normal`` commits asynchronously (`synchronous_commit =
    /// off` on the pool's connections): a commit returns before the server's WAL reaches its
    /// disk, so a crash of the database server (not of a client) may lose the last fraction of a
    /// second of enqueues and settlements; settlements lost that way are sent again. `.full`
    /// waits for the server's flush, as the server is configured to.
    static func open(
        _ place: PostgresLocation, create: Bool, readOnly: Bool, connections: Int, durability: QueueDurability = .full, logger: Logger
    ) async throws(QueueError) -> PostgresQueueStore {
        let connection = try await connect(place, logger: logger)
        do {
            try await PostgresSchema.prepare(connection, location: place, create: create && !readOnly, logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        let configuration = try place.clientConfiguration(maximumConnections: connections, synchronousCommit: durability == .full)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let store = PostgresQueueStore(place: place, client: client, logger: logger, readOnly: readOnly)
        await store.started()
        return store
    }

    /// Returns once the pool's `run()` has begun (the moment it starts is not observable; a
    /// lease before it logs a warning and waits).
    private func started() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let began = starting.withLock { state in
                if state.began { return true }
                state.waiter = continuation
                return false
            }
            if began { continuation.resume() }
        }
        await Task.yield()
    }

    static func connect(_ place: PostgresLocation, logger: Logger) async throws(QueueError) -> PostgresConnection {
        do {
            return try await PostgresConnection.connect(configuration: try place.connectionConfiguration(), id: 0, logger: logger)
        } catch {
            throw PostgresErrors.map(error, location: place.redacted)
        }
    }

    func shutDown() async {
        session.withLock { session in
            session?.end()
            session = nil
        }
        settledListener.withLock { listener in
            listener?.stop()
            listener = nil
        }
        running.cancel()
        await running.value
    }

    func watchRemoteEnqueues(_ wake: @escaping @Sendable () -> Void) {
        self.wake.withLock { $0 = wake }
    }

    // MARK: - Owner liveness

    func takeOwnership() async throws(QueueError) {
        if let current = session.current, !current.connection.isClosed { return }
        if readOnly { throw QueueError.readOnly(path: location) }
        let connection = try await Self.connect(place, logger: logger)
        let number: Int64
        do {
            let (schema, lockName, logger) = (self.schema, self.lockName, self.logger)
            number = try await failingOnClose(connection) {
                let number = try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT nextval('\(schema).drainer_id')"), logger: logger
                ).collect().first?.decode(Int64.self) ?? 0
                try await connection.query("SELECT pg_advisory_lock(hashtext(\(lockName)), \(Int32(truncatingIfNeeded: number)))", logger: logger)
                return number
            }
        } catch {
            try? await connection.close()
            throw PostgresErrors.map(error, location: location)
        }
        let host = ProcessInfo.processInfo.hostName.replacingOccurrences(of: ":", with: "_")
        let name = "\(host):\(getpid()):pg\(number)"
        let listener = Task { [channel, wake, logger] in
            do {
                try await connection.listen(on: channel) { notifications in
                    for try await _ in notifications { wake.current?() }
                }
            } catch {
                logger.debug("the drainer's connection ended", metadata: ["error": "\(error)"])
            }
        }
        let fresh = OwnerSession(connection: connection, number: number, name: name, listener: listener)
        numbers.withLock { $0.append(number) }
        let previous = session.withLock { session in
            defer { session = fresh }
            return session
        }
        previous?.end()
        logger.debug("drainer registered", metadata: ["owner": "\(name)"])
    }

    // MARK: - Running statements

    /// Runs `body` in one transaction on a pooled connection.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(QueueError) -> T {
        if readOnly { throw QueueError.readOnly(path: location) }
        // BEGIN, COMMIT and ROLLBACK are inside the guard too: a statement sent on a connection
        // that already closed never ends either (PostgresNIO 1.33 drops it with no error).
        do {
            return try await client.withConnection { connection in
                try await self.failingOnClose(connection) {
                    try await connection.query("BEGIN", logger: self.logger)
                    let value: T
                    do {
                        value = try await body(connection)
                    } catch {
                        _ = try? await connection.query("ROLLBACK", logger: self.logger)
                        throw error
                    }
                    try await connection.query("COMMIT", logger: self.logger)
                    return value
                }
            }
        } catch {
            throw PostgresErrors.map(error, location: location)
        }
    }

    /// Runs `body`, which uses `connection`, and fails it when the connection closes first.
    ///
    /// A statement may otherwise never end when the server cuts the connection (a restart, a
    /// failover): PostgresNIO 1.33 closes the connection without failing a row stream that
    /// already delivered rows, and a statement sent after the close is dropped without an
    /// error: without this guard a drain waits forever on its settle, or on the `ROLLBACK` of a
    /// transaction whose connection closed (`PostgresFleetTests` restarts the server in the
    /// middle of a drain). The body runs in a task of its own, so a caller is never held by one
    /// that does not end; the connection's `closeFuture` ends the wait (``CloseWatch``).
    func failingOnClose<T: Sendable>(_ connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let location = self.location
        let closes = self.closes
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let race = LockedBox(Race())
            let finish: @Sendable (Result<T, any Error>) -> Void = { result in
                let first = race.withLock { race in
                    defer { race.done = true }
                    return !race.done
                }
                if first { continuation.resume(with: result) }
            }
            let watch = closes.onClose(of: connection) {
                finish(.failure(QueueError.unavailable(location: location, reason: "the server closed the connection during a statement")))
                race.withLock { $0.work }?.cancel()
            }
            let work = Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                closes.forget(watch, of: connection)
                finish(result)
            }
            // Closed before the task was known to the watch: it is cancelled here instead.
            let closedAlready = race.withLock { race in
                race.work = work
                return race.done
            }
            if closedAlready { work.cancel() }
        }
    }

    /// Who ended ``failingOnClose(_:_:)``'s wait first, and the task to cancel when the
    /// connection did.
    private struct Race {
        var done = false
        var work: Task<Void, Never>?
    }

    /// Runs `body`, which writes in one statement (its own transaction), on a pooled connection.
    func writing<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(QueueError) -> T {
        if readOnly { throw QueueError.readOnly(path: location) }
        return try await reading(body)
    }

    /// Runs `body` on a pooled connection, outside a transaction (each statement its own).
    func reading<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws(QueueError) -> T {
        do {
            return try await client.withConnection { connection in
                try await self.failingOnClose(connection) { try await body(connection) }
            }
        } catch {
            throw PostgresErrors.map(error, location: location)
        }
    }

    /// The fleet's time at `now`, reading the server's clock once per boot of this host.
    func fleetTime(_ now: QueueTime) async throws(QueueError) -> Double {
        if let time = clock.time(at: now) { return time }
        let server = try await reading { connection in
            try await connection.query("SELECT extract(epoch FROM clock_timestamp())::float8", logger: self.logger)
                .collect().first?.decode(Double.self) ?? Date().timeIntervalSince1970
        }
        return clock.anchor(server: server, at: now)
    }

    /// `SQL` with the schema's name put in for every `§`.
    ///
    /// In Swift rather than with Foundation's `replacingOccurrences`, which on Linux goes through
    /// CFString and folds every character: every statement of a drain's commits passes here.
    func sql(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count + 4 * schema.utf8.count)
        var rest = Substring(text)
        while let mark = rest.firstIndex(of: "§") {
            result += rest[..<mark]
            result += schema
            rest = rest[rest.index(after: mark)...]
        }
        result += rest
        return result
    }
}

/// The fleet's clock of this process (``FleetClock``), for tests.
package enum PostgresFleetClock {
    /// Anchors this process's fleet clock for `now`'s boot at `server` seconds since the epoch,
    /// as the first reading of the server's clock in that boot would: for a test that plays
    /// boots and the passing of time on a clock of its own (the model check), so that the
    /// fleet's time moves with it. A boot anchored already keeps its first reading.
    package static func anchor(server: Double, at now: QueueTime) {
        _ = FleetClock.shared.anchor(server: server, at: now)
    }
}

/// A drainer's own connection: it holds the advisory lock that says the drainer lives, and
/// listens for enqueues.
final class OwnerSession: Sendable {
    let connection: PostgresConnection
    let number: Int64
    let name: String
    let listener: Task<Void, Never>

    init(connection: PostgresConnection, number: Int64, name: String, listener: Task<Void, Never>) {
        self.connection = connection
        self.number = number
        self.name = name
        self.listener = listener
    }

    /// Lets go of the lock (by closing the connection) and stops listening.
    func end() {
        listener.cancel()
        // The connection must live until it is closed (PostgresNIO checks): the callback keeps it.
        let connection = self.connection
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }
}

/// The fleet's clock: the database server's wall clock, read once per boot of this host and
/// carried forward by the boot clock. Every host compares times on (nearly) one clock, and a
/// step of this host's wall clock moves nothing; a step of the server's clock is seen only by
/// hosts that read it afterwards.
final class FleetClock: Sendable {
    private struct Anchor {
        var uptime: Double
        var server: Double
    }

    /// By boot: one process sees one boot, but a test that plays boots on a clock of its own
    /// runs beside tests on the system's, and neither may move the other's anchor.
    private let anchors = LockedBox<[String: Anchor]>([:])

    /// The process's clock, shared by its stores, so two queues of one process (or of one
    /// test's injected clock) never disagree about a lease.
    static let shared = FleetClock()

    /// The fleet's time at `now`, or `nil` before the server's clock was read in `now`'s boot.
    func time(at now: QueueTime) -> Double? {
        guard let anchor = anchors.current[now.boot] else { return nil }
        return anchor.server + (now.uptime - anchor.uptime)
    }

    /// Anchors the clock at `server` for `now`'s boot, unless a reading of that boot was taken
    /// already (the first one stays, so times never step back), and returns the time at `now`.
    func anchor(server: Double, at now: QueueTime) -> Double {
        anchors.withLock { anchors in
            if let anchor = anchors[now.boot] { return anchor.server + (now.uptime - anchor.uptime) }
            anchors[now.boot] = Anchor(uptime: now.uptime, server: server)
            return server
        }
    }
}
