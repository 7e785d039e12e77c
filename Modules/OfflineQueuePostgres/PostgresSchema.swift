import Foundation
import Logging
import OfflineQueue
import PostgresNIO

/// The queue's tables in their own schema, as named, append-only migrations recorded in
/// `<schema>.migration` (name, version, when).
///
/// Never edit a registered migration: append one. A schema holding a migration this code does
/// not know (a newer Courier's) is refused before anything is changed. Migrations run in one
/// transaction under an advisory lock, so replicas starting together migrate once.
///
/// Times are `double precision` seconds since 1970 on the fleet's clock (the server's, carried
/// by each host's boot clock; see ``FleetClock``).
enum PostgresSchema {
    struct Migration: Sendable {
        let name: String
        let sql: @Sendable (_ schema: String) -> String
    }

    static let migrations: [Migration] = [
        Migration(name: "v1-entries") { schema in
            """
            CREATE TABLE "\(schema)".entry (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                idempotency_key text NOT NULL UNIQUE,
                method text NOT NULL,
                url text NOT NULL,
                headers text NOT NULL,
                body bytea,
                body_ref text,
                body_length bigint,
                scopes text NOT NULL,
                name text NOT NULL,
                group_key text,
                priority integer NOT NULL DEFAULT 0,
                timeout_ms bigint,
                state text NOT NULL CHECK (state IN ('pending', 'inflight', 'delivered', 'dead')),
                attempts integer NOT NULL DEFAULT 0,
                created_at double precision NOT NULL,
                budget_from double precision NOT NULL,
                next_attempt_at double precision NOT NULL,
                last_attempt_at double precision,
                finished_at double precision,
                waiting_network boolean NOT NULL DEFAULT false,
                lease_owner text,
                lease_drainer bigint,
                lease_expires_at double precision,
                last_status integer,
                last_error text,
                response_excerpt text,
                dead_reason text
            );
            -- Claim order among pending entries.
            CREATE INDEX entry_pending ON "\(schema)".entry (priority DESC, id) WHERE state = 'pending';
            -- "Is an earlier entry of this group still open?"
            CREATE INDEX entry_group_open ON "\(schema)".entry (group_key, id)
                WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight');
            -- Entries in flight, by drainer: reclaims, lapsed leases, counts.
            CREATE INDEX entry_inflight ON "\(schema)".entry (lease_drainer) WHERE state = 'inflight';
            -- Entries waiting only for the network.
            CREATE INDEX entry_network_wait ON "\(schema)".entry (id) WHERE state = 'pending' AND waiting_network;
            -- The next due time.
            CREATE INDEX entry_due ON "\(schema)".entry (next_attempt_at) WHERE state = 'pending';
            -- Counts, listings, purges and retention by state.
            CREATE INDEX entry_state ON "\(schema)".entry (state, id);
            -- Bodies still referenced (the orphan sweep).
            CREATE INDEX entry_body_ref ON "\(schema)".entry (body_ref) WHERE body_ref IS NOT NULL;
            -- Large bodies, in chunks, apart from their rows.
            CREATE TABLE "\(schema)".body (
                ref text NOT NULL,
                seq integer NOT NULL,
                data bytea NOT NULL,
                created_at double precision NOT NULL,
                PRIMARY KEY (ref, seq)
            );
            -- Pauses: a row without a group pauses the whole queue; claims skip what they hold.
            CREATE TABLE "\(schema)".pause (
                group_key text,
                paused_at double precision NOT NULL
            );
            CREATE UNIQUE INDEX pause_group ON "\(schema)".pause (group_key) WHERE group_key IS NOT NULL;
            CREATE UNIQUE INDEX pause_queue ON "\(schema)".pause ((true)) WHERE group_key IS NULL;
            -- Drainers' numbers: each holds an advisory lock on its own for as long as it lives.
            CREATE SEQUENCE "\(schema)".drainer_id;
            """
        },
    ]

    /// A migration's statements: its text split at each `;` that ends a line.
    static func statements(_ sql: String) -> [String] {
        sql.components(separatedBy: ";\n")
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .map { $0.hasSuffix(";") ? String($0.dropLast()) : $0 }
            .filter { statement in statement.split(separator: "\n").contains { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("--") } }
    }

    /// The version this code writes: the number of migrations it knows.
    static var version: Int { migrations.count }

    /// Creates or migrates the schema on `connection` (`create`), or checks that it exists and
    /// is not newer (`create == false`: a command that must not make a queue).
    ///
    /// - Throws: ``QueueError/newerSchema(path:found:supported:)`` for a schema holding an
    ///   unknown migration, ``QueueError/databaseMissing(path:)`` for a missing one when not
    ///   creating; nothing is changed in either case.
    static func prepare(_ connection: PostgresConnection, location: PostgresLocation, create: Bool, logger: Logger) async throws(QueueError) {
        let schema = location.schema
        do {
            try await connection.withTransaction(logger: logger) { connection in
                // One migrator at a time per schema; the lock ends with the transaction.
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\("courier-migrate:" + schema)))", logger: logger)
                let exists = try await connection.query(
                    "SELECT to_regclass(\("\"" + schema + "\".migration")) IS NOT NULL", logger: logger
                ).collect().first?.decode(Bool.self) ?? false
                if !exists {
                    guard create else { throw QueueError.databaseMissing(path: location.redacted) }
                    try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \"\(schema)\""), logger: logger)
                    try await connection.query(PostgresQuery(unsafeSQL: """
                        CREATE TABLE "\(schema)".migration (
                            name text PRIMARY KEY, version integer NOT NULL UNIQUE, applied_at timestamptz NOT NULL DEFAULT now()
                        )
                        """), logger: logger)
                }
                var applied: [String] = []
                for try await name in try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT name FROM \"\(schema)\".migration ORDER BY version"), logger: logger
                ).decode(String.self) {
                    applied.append(name)
                }
                let known = migrations.map(\.name)
                guard applied.count <= known.count, zip(applied, known).allSatisfy({ $0 == $1 }) else {
                    throw QueueError.newerSchema(path: location.redacted, found: applied.count, supported: known.count)
                }
                guard applied.count < known.count else { return }
                guard create else {
                    // An older schema, opened by a command that must not change it.
                    throw QueueError.cannotCreate(
                        path: location.redacted,
                        reason: "its schema is at version \(applied.count) and needs migrating to \(known.count); run a command that writes (sync run, enqueue) first"
                    )
                }
                for (index, migration) in migrations.enumerated().dropFirst(applied.count) {
                    // The extended protocol takes one statement at a time.
                    for statement in statements(migration.sql(schema)) {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO \(unescaped: "\"" + schema + "\"").migration (name, version) VALUES (\(migration.name), \(index + 1))",
                        logger: logger
                    )
                    logger.info("migrated the queue's schema", metadata: ["schema": "\(schema)", "migration": "\(migration.name)"])
                }
            }
        } catch {
            throw PostgresErrors.map(error, location: location.redacted)
        }
    }
}
