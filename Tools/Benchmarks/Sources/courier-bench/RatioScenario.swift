import AsyncHTTPClient
import BenchSupport
import Foundation
import HTTPCore
import OfflineQueue

/// The goals of the performance issue that compare Courier with a raw twin, in the order of its
/// table, and how each side of each is measured. `courier-bench --goals` builds them in its own
/// process (both sides) and in its A/A child (the raw side only), with the same code.
enum RatioScenario: String, CaseIterable, Sendable {
    case modelGET = "model-GET"
    /// Each side as a user gets it by default (`DefaultCalls`), the page plain and gzipped.
    case defaultsGET = "model-GET-defaults"
    case gzipGET = "model-GET-gzip"
    case plugins
    case urlSession = "URLSession"
    case drainSQLite = "drain-SQLite"
    case enqueue
    case bodies = "10MiB"
    case drainPostgres = "drain-PostgreSQL"
    // `courier-bench --sealed`: sealing on (B) against off (A), the same queue otherwise.
    case sealedEnqueue = "sealed-enqueue"
    case sealedDrain = "sealed-drain"
    case sealedBodies = "sealed-10MiB"

    /// The scenarios of `--sealed`; `--goals` runs the others.
    var isSealing: Bool { [.sealedEnqueue, .sealedDrain, .sealedBodies].contains(self) }

    var figure: String {
        switch self {
        case .modelGET: "model GET, APIClient + AsyncHTTPClient vs raw AsyncHTTPClient"
        case .defaultsGET: "model GET, default configurations: AsyncHTTPClientTransport() vs HTTPClient(eventLoopGroupProvider: .singleton)"
        case .gzipGET: "model GET of a gzipped page, default AsyncHTTPClientTransport() vs raw AsyncHTTPClient decompressing"
        case .plugins: "5 plugins + 2 interceptors vs none"
        case .urlSession: "model GET, APIClient + URLSessionTransport vs raw URLSession"
        case .drainSQLite: "drain 10,000 POSTs (SQLite, NORMAL), concurrency 16, vs raw AsyncHTTPClient POSTs"
        case .enqueue: "durable enqueue (FULL) vs minimal raw SQLite insert (WAL, FULL)"
        case .bodies: "10 MiB bodies into memory, 4 at a time, vs raw collect"
        case .drainPostgres: "drain 10,000 POSTs (PostgreSQL), concurrency 16, vs raw AsyncHTTPClient POSTs"
        case .sealedEnqueue: "durable enqueue (FULL) of 1 KiB bodies, sealed vs unsealed"
        case .sealedDrain: "drain 10,000 POSTs (SQLite, NORMAL), concurrency 16, sealed vs unsealed"
        case .sealedBodies: "10 MiB bodies enqueued and drained (SQLite, 4 at a time), sealed vs unsealed"
        }
    }

    var goal: Double {
        switch self {
        case .modelGET, .defaultsGET, .gzipGET: 0.97
        case .plugins, .urlSession, .bodies: 0.95
        case .drainSQLite: 0.85
        case .enqueue: 0.75
        case .drainPostgres: 0.6
        case .sealedEnqueue, .sealedDrain: 0.9
        case .sealedBodies: 0.8
        }
    }

    /// What one operation is, for "CPU per …".
    var operation: String {
        switch self {
        case .modelGET, .defaultsGET, .gzipGET, .plugins, .urlSession: "call"
        case .bodies, .sealedBodies: "body"
        case .enqueue, .sealedEnqueue: "enqueue"
        case .drainSQLite, .drainPostgres, .sealedDrain: "entry"
        }
    }

    var operations: String {
        switch self {
        case .bodies, .sealedBodies: "bodies"
        case .drainSQLite, .drainPostgres, .sealedDrain: "entries"
        default: operation + "s"
        }
    }

    /// Operations per side and round, and in the warm-up each side runs first.
    func counts(_ options: Options) -> (round: Int, warmup: Int) {
        switch self {
        case .modelGET, .defaultsGET, .gzipGET, .plugins, .urlSession: (options.requests, options.warmup)
        // A 10 MiB body costs about as much as 400 page calls: fewer of them.
        case .bodies: (max(1, options.requests / 40), max(1, options.warmup / 40))
        // One sync per enqueue: 2,000 take about half a second on the slower side.
        case .enqueue, .sealedEnqueue: (2_000, 200)
        case .drainSQLite, .drainPostgres, .sealedDrain: (10_000, 2_000)
        // 160 MiB written, synced, read and sent per side and round.
        case .sealedBodies: (16, 4)
        }
    }

    /// One side of a ratio: `measure(round, count)` runs `count` operations and measures them.
    /// Round 0 is the warm-up; a round's files and schemas are named after it.
    struct Side: Sendable {
        let name: String
        let measure: @Sendable (_ round: Int, _ count: Int) async throws -> Measured
    }

    /// What the sides of a process share: the server, the callers, a folder of its own for
    /// database files, and the PostgreSQL server with the schemas made on it (to drop).
    struct Context: Sendable {
        let port: Int
        let concurrency: Int
        let folder: URL
        let database: PostgresBench.Server?
        let tag: String
        let made = LockedSamples()

        init(port: Int, concurrency: Int, database: PostgresBench.Server?) throws {
            self.port = port
            self.concurrency = concurrency
            self.database = database
            tag = "\(database?.prefix ?? "courier_bench")_\(getpid())"
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-goals-\(getpid())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }

        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

        /// Removes a database file and its `-wal`, `-shm` and other companions.
        func remove(_ name: String) {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            for file in files where file.hasPrefix(name) { try? FileManager.default.removeItem(atPath: path(file)) }
        }
    }

    /// The raw side, the Courier side, and what closes their clients.
    struct Sides: Sendable {
        let raw: Side
        let courier: Side
        let close: @Sendable () async throws -> Void
    }

    func sides(_ context: Context) -> Sides {
        switch self {
        case .sealedEnqueue, .sealedDrain, .sealedBodies:
            return sealingSides(context)
        case .defaultsGET, .gzipGET:
            let calls = DefaultCalls(port: context.port, gzip: self == .gzipGET)
            return Sides(raw: Self.side(calls.raw, concurrency: context.concurrency), courier: Self.side(calls.courier, concurrency: context.concurrency), close: calls.shutdown)
        case .modelGET, .plugins, .urlSession, .bodies:
            let calls = HTTPCalls(port: context.port, concurrency: context.concurrency)
            let (raw, courier): (Variant, Variant) = switch self {
            case .modelGET: (calls.rawModelGET, calls.courierModelGET)
            case .plugins: (calls.courierModelGET, calls.pluggedModelGET)
            case .urlSession: (calls.rawURLSession, calls.courierURLSession)
            default: (calls.rawBig, calls.courierBig)
            }
            let concurrency = self == .bodies ? 4 : context.concurrency
            return Sides(raw: Self.side(raw, concurrency: concurrency), courier: Self.side(courier, concurrency: concurrency), close: calls.shutdown)
        case .enqueue:
            let raw = Side(name: "minimal raw SQLite insert") { round, count in
                defer { context.remove("minimal-\(round).db") }
                return try await QueueBench.minimalInserts(count: count, path: context.path("minimal-\(round).db"))
            }
            let courier = Side(name: "OfflineQueue.enqueue, .full") { round, count in
                defer { context.remove("enqueue-\(round).db") }
                return try await QueueBench.queueEnqueues(count: count, batch: 1, path: context.path("enqueue-\(round).db"), durability: .full)
            }
            return Sides(raw: raw, courier: courier, close: {})
        case .drainSQLite, .drainPostgres:
            let url = "http://127.0.0.1:\(context.port)/events"
            let (httpClient, client) = QueueBench.drainClients(port: context.port)
            let raw = Side(name: "raw AsyncHTTPClient POSTs") { _, count in
                try await Measured.of(count: count) { try await QueueBench.rawPosts(count: count, url: url, client: httpClient) }
            }
            let courier = self == .drainSQLite
                ? Side(name: "OfflineQueue.drain, SQLite") { round, count in
                    defer { context.remove("drain-\(round).db") }
                    return try await QueueBench.measuredDrain(count: count, url: url, client: client, path: context.path("drain-\(round).db"), durability: .normal)
                }
                : Side(name: "OfflineQueue.drain, PostgreSQL") { round, count in
                    guard let database = context.database else { throw BenchError("no PostgreSQL server") }
                    return try await PostgresBench.measuredDrain(database: database, schema: "\(context.tag)_goal_drain_\(round)", count: count, url: url, client: client, made: context.made)
                }
            return Sides(raw: raw, courier: courier, close: { try await httpClient.shutdown() })
        }
    }

    /// Sealing off (A) and on (B): the unsealed side is also what the A/A child runs.
    private func sealingSides(_ context: Context) -> Sides {
        let url = "http://127.0.0.1:\(context.port)/events"
        let (httpClient, client) = QueueBench.drainClients(port: context.port)
        let side = { (sealed: Bool) -> Side in
            let name = sealed ? "sealed" : "unsealed"
            return switch self {
            case .sealedEnqueue:
                Side(name: "OfflineQueue.enqueue, 1 KiB, .full, \(name)") { round, count in
                    defer { context.remove("sealing-enqueue-\(name)-\(round).db") }
                    return try await SealingBench.enqueues(count: count, path: context.path("sealing-enqueue-\(name)-\(round).db"), sealed: sealed)
                }
            case .sealedDrain:
                Side(name: "OfflineQueue.drain, SQLite, \(name)") { round, count in
                    defer { context.remove("sealing-drain-\(name)-\(round).db") }
                    return try await SealingBench.drain(count: count, url: url, client: client, path: context.path("sealing-drain-\(name)-\(round).db"), sealed: sealed)
                }
            default:
                Side(name: "10 MiB bodies, \(name)") { round, count in
                    defer { context.remove("sealing-large-\(name)-\(round).db") }
                    return try await SealingBench.largeBodies(count: count, url: url, client: client, path: context.path("sealing-large-\(name)-\(round).db"), sealed: sealed)
                }
            }
        }
        return Sides(raw: side(false), courier: side(true), close: { try await httpClient.shutdown() })
    }

    /// A side that runs `variant` from `concurrency` callers.
    static func side(_ variant: Variant, concurrency: Int) -> Side {
        Side(name: variant.name) { _, count in
            try await Measured.of(count: count) { Bench.rate(count, try await variant.run(requests: count, concurrency: concurrency).wall) }
        }
    }
}
