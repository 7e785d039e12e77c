import BenchSupport
import Benchmark
import Foundation
import Logging
import OfflineQueue
import OfflineQueuePostgres
import PostgresNIO

/// The drain from the PostgreSQL store (16 at a time), beside the same raw POSTs as the SQLite
/// drain (`drain.raw-POSTs`). The server is the caller's: `COURIER_TEST_POSTGRES_URL` (as
/// `Tools/test` sets it) or `COURIER_BENCH_POSTGRES_URL`, and `PGPASSWORD`. Without one the
/// scenario is skipped, with a note on standard error. Its schema, `courier_benchmarks_<pid>`,
/// is dropped at the end.
enum PostgresScenarios {
    static let environmentKeys = ["COURIER_TEST_POSTGRES_URL", "COURIER_BENCH_POSTGRES_URL"]

    static func register() {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environmentKeys.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else {
            FileHandle.standardError.write(Data("drain-PostgreSQL.Courier skipped: set COURIER_TEST_POSTGRES_URL (and PGPASSWORD) to a server, e.g. one started by Tools/pg-cluster\n".utf8))
            return
        }
        let schema = "courier_benchmarks_\(ProcessInfo.processInfo.processIdentifier)"
        Benchmark("drain-PostgreSQL.Courier") { benchmark, queue in
            try await QueueScenarios.fillAndDrain(benchmark, queue)
        } setup: {
            // `.normal`, as the drain's throughput figure (and the SQLite drain's).
            try await OfflineQueue.open(
                configuration: QueueConfiguration(path: try queueURL(url, schema: schema), durability: .normal, concurrency: 16),
                client: Loopback.client, logger: quiet
            )
        } teardown: {
            try await drop(schema, url: url)
        }
    }

    static let quiet: Logger = {
        var logger = Logger(label: "courier-benchmarks.postgres")
        logger.logLevel = .warning
        return logger
    }()

    /// `url` with `schema` and no TLS (the server is on loopback).
    static func queueURL(_ url: String, schema: String) throws -> String {
        guard var components = URLComponents(string: url) else { throw BenchError("the PostgreSQL URL is not a URL") }
        components.queryItems = (components.queryItems ?? []).filter { $0.name != "schema" && $0.name != "sslmode" }
            + [URLQueryItem(name: "schema", value: schema), URLQueryItem(name: "sslmode", value: "disable")]
        return components.string!
    }

    /// Drops the scenario's schema with a connection of its own.
    static func drop(_ schema: String, url: String) async throws {
        let location = try PostgresLocation(url: url)
        let password = URLComponents(string: url)?.password?.removingPercentEncoding ?? ProcessInfo.processInfo.environment["PGPASSWORD"]
        let configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: password, database: location.database, tls: .disable
        )
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: quiet)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"), logger: quiet)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
