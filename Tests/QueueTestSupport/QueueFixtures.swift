package import AsyncHTTPClientTransport
package import CourierTesting
package import Foundation
package import HTTPCore
package import Logging
package import OfflineQueue
import OfflineQueuePostgres
package import PostgresNIO
package import Reachability
package import TestSupport

// The queue's test fixtures, shared by the test targets of its modules (the engine and the
// SQLite store, the PostgreSQL store, QueueSystemd): temporary folders, a store of each kind,
// a queue over it, a connection to the test cluster.

/// A fresh folder under the system temp folder, removed by the caller with `remove()`.
package struct TempFolder: Sendable {
    package let url: URL

    package init(_ prefix: String = "courier-queue") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    package var databasePath: String { url.appendingPathComponent("queue.db").path }

    package func remove() { try? FileManager.default.removeItem(at: url) }
}

/// One transport for the whole test target: AsyncHTTPClient's event loops are costly to make.
package let sharedTransport = AsyncHTTPClientTransport()

/// A queue on `path` whose client points at `server`.
package func makeQueue(
    path: String,
    server: TestHTTPServer,
    monitor: (any NetworkMonitor)? = nil,
    policy: DeliveryPolicy = DeliveryPolicy(backoff: Backoff(base: .milliseconds(20), cap: .milliseconds(100))),
    concurrency: Int = 8,
    timeout: Duration = .hangGuard,
    plugins: [any Plugin] = [],
    tweak: (inout QueueConfiguration) -> Void = { _ in }
) throws -> OfflineQueue {
    var configuration = QueueConfiguration(path: path, durability: .normal, policy: policy, concurrency: concurrency)
    tweak(&configuration)
    var clientConfiguration = ClientConfiguration(baseURL: server.baseURL, timeout: timeout)
    clientConfiguration.plugins = plugins
    let client = APIClient(configuration: clientConfiguration, transport: sharedTransport)
    return try OfflineQueue(configuration: configuration, client: client, monitor: monitor)
}

/// The idempotency keys the server saw, in arrival order.
package func idempotencyKeys(_ server: TestHTTPServer, path: String? = nil) -> [String] {
    server.requests.filter { path == nil || $0.path == path }.compactMap { $0.values(of: "Idempotency-Key").first }
}


/// Drains until nothing is open, at most `rounds` drains, and returns the summaries added up.
/// In between it moves `clock` (the queue's injected clock) to the next due time, or, for a
/// queue on the system clock, sleeps until then.
@discardableResult
package func drainUntilSettled(_ queue: OfflineQueue, advancing clock: ManualQueueClock? = nil, rounds: Int = 50) async throws -> DrainSummary {
    var total = DrainSummary()
    for _ in 0..<rounds {
        let summary = try await queue.drain()
        total.delivered += summary.delivered
        total.failed += summary.failed
        total.dead += summary.dead
        total.waitingForNetwork += summary.waitingForNetwork
        total.leasesLost += summary.leasesLost
        total.remaining = summary.remaining
        total.nextAttemptAt = summary.nextAttemptAt
        if try await queue.counts().open == 0 { break }
        if let clock {
            let now = queue.configuration.clock.now().wall
            clock.advance(by: .milliseconds(Int64(max(0, (summary.nextAttemptAt ?? now).timeIntervalSince(now)) * 1000) + 1))
            continue
        }
        let wait = max(0.005, min(2, (summary.nextAttemptAt ?? Date()).timeIntervalSinceNow))
        try await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1))
    }
    return total
}

/// A route answering `failures` in turn for its first calls, then 200. Each failure is a
/// status with headers, or `nil` for "close the connection without answering".
package func scriptFailures(_ server: TestHTTPServer, _ path: String, _ failures: [(status: Int, headers: [HeaderField])?]) {
    let calls = LockedBox(0)
    server.route(path) { request, writer in
        let call = calls.withLock { count -> Int in
            count += 1
            return count
        }
        guard call <= failures.count else {
            try await writer.respond(status: 200, body: Data("ok".utf8))
            return
        }
        guard let failure = failures[call - 1] else {
            writer.closeConnection()
            return
        }
        try await writer.respond(status: failure.status, headers: failure.headers, body: Data("{\"error\":\"status \(failure.status)\"}".utf8))
    }
}

// MARK: - Both stores

/// The store a behaviour test runs on: the queue's behaviour is one, whichever holds the rows.
package enum StoreKind: String, CaseIterable, Sendable {
    case sqlite
    case postgres
    /// `CourierTesting`'s ``MemoryQueueStore``: one process's memory.
    case memory

    /// The stores several processes can share (a test with drainer processes of its own).
    package static let shared: [StoreKind] = [.sqlite, .postgres]
}

/// A fresh place for one test's queue: a file in a temporary folder, or a schema of its own
/// in the test cluster that `Tools/test` starts (`COURIER_TEST_POSTGRES_URL`, with the
/// password in `PGPASSWORD`).
package struct TestStore: RemovableTestResource {
    package let kind: StoreKind
    package let folder: TempFolder
    /// The file's path, or the database URL naming the schema.
    package let path: String
    /// The schema, on PostgreSQL.
    package let schema: String?
    /// The rows, in memory.
    package let memory: MemoryQueueStore?

    /// The cluster's URL, without a schema.
    package static var postgresURL: String? {
        ProcessInfo.processInfo.environment["COURIER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// - Parameter database: on PostgreSQL, a database of the cluster other than the URL's
    ///   (the model check keeps one of its own, whose commits do not wait for the disk).
    package init(_ kind: StoreKind, database: String? = nil) throws {
        self.kind = kind
        folder = try TempFolder()
        memory = kind == .memory ? MemoryQueueStore() : nil
        switch kind {
        case .sqlite:
            path = folder.databasePath
            schema = nil
        case .memory:
            path = "memory"
            schema = nil
        case .postgres:
            guard var url = Self.postgresURL else {
                folder.remove()
                throw TestStoreError.noCluster
            }
            if let database, let slash = url.range(of: "/", options: .backwards) {
                let query = url[slash.upperBound...].firstIndex(of: "?").map { String(url[$0...]) } ?? ""
                url = url[..<slash.upperBound] + database + query
            }
            let schema = "t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
            self.schema = schema
            path = url + (url.contains("?") ? "&" : "?") + "schema=" + schema
        }
    }

    /// Whether the body `name` (of a ``StoredBody/file(name:length:)``) is still kept: its
    /// file beside the database, or its chunks.
    package func bodyExists(_ name: String) async throws -> Bool {
        if let memory { return memory.keepsBody(name) }
        guard let schema else {
            return FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("queue.db.bodies").appendingPathComponent(name).path)
        }
        var binds = PostgresBindings()
        binds.append(name)
        let query = PostgresQuery(unsafeSQL: "SELECT count(*) FROM \"\(schema)\".body WHERE ref = $1", binds: binds)
        let chunks = try await withPostgres(path) { connection in
            try await connection.query(query, logger: testLogger).collect().first?.decode(Int64.self) ?? 0
        }
        return chunks > 0
    }

    /// A queue over this store with `configuration` (whose path it ignores for memory).
    package func open(_ configuration: QueueConfiguration, client: APIClient, monitor: (any NetworkMonitor)? = nil) async throws -> OfflineQueue {
        if let memory { return OfflineQueue.inMemory(memory, configuration: configuration, client: client, monitor: monitor) }
        return PostgresLocation.isPostgresURL(configuration.path)
            ? try await OfflineQueue.open(configuration: configuration, client: client, monitor: monitor)
            : try OfflineQueue(configuration: configuration, client: client, monitor: monitor)
    }

    /// Removes the folder and drops the schema.
    package func remove() async {
        folder.remove()
        guard let schema else { return }
        _ = try? await withPostgres(path) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"), logger: testLogger)
        }
    }
}

package enum TestStoreError: Error, CustomStringConvertible {
    case noCluster

    package var description: String {
        "COURIER_TEST_POSTGRES_URL is not set: run Tools/test, which starts a throwaway PostgreSQL cluster (Tools/pg-cluster start .build/pg) and sets it with PGPASSWORD"
    }
}

package let testLogger = Logger(label: "courier.tests")

/// Runs `body` on a new connection to the database of `url` (password from the URL or
/// `PGPASSWORD`), closed afterwards.
package func withPostgres<T: Sendable>(_ url: String, _ body: (PostgresConnection) async throws -> T) async throws -> T {
    let location = try PostgresLocation(url: url)
    var configuration = PostgresConnection.Configuration(
        host: location.host, port: location.port, username: location.user,
        password: ProcessInfo.processInfo.environment["PGPASSWORD"], database: location.database, tls: .disable
    )
    // The URL's connect_timeout (Tools/test gives 300 s): a hang guard, not a deadline that a
    // loaded machine misses (5 s failed the outbox test beside a busy loop: a PSQLError from the
    // connect, where the test expected the transaction's error).
    configuration.options.connectTimeout = .seconds(location.connectTimeout?.components.seconds ?? 300)
    let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: testLogger)
    do {
        let value = try await body(connection)
        try? await connection.close()
        return value
    } catch {
        try? await connection.close()
        throw error
    }
}

/// A queue on `store` whose client points at `server`; the same settings as
/// ``makeQueue(path:server:monitor:policy:concurrency:timeout:plugins:tweak:)``, over `transport`.
package func makeQueue(
    on store: TestStore,
    server: TestHTTPServer,
    monitor: (any NetworkMonitor)? = nil,
    policy: DeliveryPolicy = DeliveryPolicy(backoff: Backoff(base: .milliseconds(20), cap: .milliseconds(100))),
    concurrency: Int = 8,
    timeout: Duration = .hangGuard,
    plugins: [any Plugin] = [],
    transport: any Transport = sharedTransport,
    tweak: (inout QueueConfiguration) -> Void = { _ in }
) async throws -> OfflineQueue {
    var configuration = QueueConfiguration(path: store.path, durability: .normal, policy: policy, concurrency: concurrency)
    tweak(&configuration)
    var clientConfiguration = ClientConfiguration(baseURL: server.baseURL, timeout: timeout)
    clientConfiguration.plugins = plugins
    let client = APIClient(configuration: clientConfiguration, transport: transport)
    return try await store.open(configuration, client: client, monitor: monitor)
}


/// Routes and fillers of the multi-process and fleet tests.
package enum QueueRoutes {
    /// A route that holds each request for `hold` and counts keys.
    package static func counting(_ server: TestHTTPServer, _ path: String, hold: Duration) -> LockedBox<[String: Int]> {
        let counts = LockedBox<[String: Int]>([:])
        server.route(path) { request, writer in
            try await Task.sleep(for: hold)
            if let key = request.values(of: "Idempotency-Key").first {
                counts.withLock { $0[key, default: 0] += 1 }
            }
            try await writer.respond(status: 200)
        }
        return counts
    }

    /// Enqueues `count` POSTs to `url(n)`, in transactions of 500.
    package static func fill(_ queue: OfflineQueue, count: Int, url: (Int) -> String) async throws -> [Ticket] {
        var tickets: [Ticket] = []
        for start in stride(from: 0, to: count, by: 500) {
            let batch = (start..<min(count, start + 500)).map { QueuedRequest(method: "POST", url: url($0), body: .data(Data("{\"n\":\($0)}".utf8))) }
            tickets += try await queue.enqueue(batch)
        }
        return tickets
    }

    /// A route that holds its first `held` calls until `release` is set, counting arrivals.
    package static func holding(_ server: TestHTTPServer, _ path: String, held: Int = .max) -> (arrived: LockedBox<Int>, release: LockedBox<Bool>) {
        let arrived = LockedBox(0)
        let release = LockedBox(false)
        server.route(path) { _, writer in
            let call = arrived.withLock { count -> Int in
                count += 1
                return count
            }
            // The server's own wait for the test's word, not a timing assumption.
            while call <= held && !release.current { try await Task.sleep(for: .milliseconds(5)) }
            try await writer.respond(status: 200)
        }
        return (arrived, release)
    }
}

extension Sequence where Element: Sendable {
    /// `map` with an async transform, one element after another.
    package func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
