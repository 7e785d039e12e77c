import Foundation
import Logging
import OfflineQueueCore
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
        // A drain's commit in one statement, so one round trip: the settlements (one `UPDATE … FROM
        // unnest(…)` for every kind), now and then the entries of drainers that are gone and the
        // lapsed leases, then the claim, each statement seeing the ones before it as separate
        // statements of one transaction would. Rows: the ids not settled (`lost`), how many were taken
        // back (`reclaimed`, in the id column), the claimed entries (`claimed`).
        //
        // The planner settings pin the claim's plan, a walk of the claim order's index that stops
        // at the limit: on a table not analyzed yet it otherwise reads every pending entry through
        // the due-time index and sorts them, at every claim. Inside a function the statements are
        // planned once per connection, not at every commit.
        Migration(name: "v2-settle-and-claim") { schema in
            """
            \(settleAndClaim(schema))
            """
        },
        // Sealing at rest (Docs/Encryption.md): an entry sealed under a key keeps the key's id and
        // its sealed target and headers (`NULL` for an entry in clear); the queue keeps its own id
        // (16 random bytes, drawn once), bound into every sealed value, and a key-check value per
        // key id it sealed with, so that a wrong key is told before an entry is touched.
        // `settle_and_claim` returns the two columns with its claimed rows: its result changes,
        // so it is dropped and made again (the latest definition, v2's, with them added).
        Migration(name: "v3-sealing") { schema in
            """
            ALTER TABLE "\(schema)".entry ADD COLUMN seal_key text, ADD COLUMN seal bytea;
            -- The queue's own values, in one row.
            CREATE TABLE "\(schema)".queue_meta (
                one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row),
                queue_uuid bytea NOT NULL CHECK (length(queue_uuid) = 16)
            );
            INSERT INTO "\(schema)".queue_meta (queue_uuid) VALUES (uuid_send(gen_random_uuid()));
            CREATE TABLE "\(schema)".queue_key (
                key_id text PRIMARY KEY,
                check_value text NOT NULL
            );
            \(dropSettleAndClaim(schema))
            \(settleAndClaim(schema, outputs: ", o_seal_key text, o_seal bytea", columns: ", e.seal_key, e.seal"))
            """
        },
        // The W3C trace context an entry was enqueued in (Docs/Observability.md): clear metadata
        // beside the request, never among its (possibly sealed) headers; rows of earlier versions
        // have none. `settle_and_claim` returns the two columns with its claimed rows, so it is
        // made again, as v2 made it, with them added.
        Migration(name: "v4-trace-context") { schema in
            """
            ALTER TABLE "\(schema)".entry ADD COLUMN traceparent text, ADD COLUMN tracestate text;
            \(dropSettleAndClaim(schema))
            \(settleAndClaim(
                schema, outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text",
                columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate"
            ))
            """
        },
        // Entries that wait for others (Docs/OfflineQueue.md, "Offline work in steps"): an
        // `entry_edge` row per link, and a `blocked` state outside the claim order's index, so a
        // claim reads what it read before however many entries wait (the states later steps of
        // that work keep are allowed at once). A blocked entry holds its group's later entries
        // as a pending one does. `resolve_blocked` is DependencyRule's verdict in SQL, applied
        // by `settle_and_claim` to the children of what it settles, in its one statement, and
        // by the store's retries, purges and inserts in theirs.
        Migration(name: "v5-dependencies") { schema in
            """
            ALTER TABLE "\(schema)".entry DROP CONSTRAINT entry_state_check;
            ALTER TABLE "\(schema)".entry ADD CONSTRAINT entry_state_check
                CHECK (state IN ('pending', 'inflight', 'delivered', 'dead', 'blocked', 'conflict', 'superseded')) NOT VALID;
            DROP INDEX "\(schema)".entry_group_open;
            CREATE INDEX entry_group_open ON "\(schema)".entry (group_key, id)
                WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight', 'blocked');
            CREATE TABLE "\(schema)".entry_edge (
                child bigint NOT NULL REFERENCES "\(schema)".entry (id) ON DELETE CASCADE,
                parent bigint NOT NULL,
                when_parent_dies text NOT NULL CHECK (when_parent_dies IN ('die', 'wait', 'proceed')),
                parent_delivered boolean NOT NULL DEFAULT false,
                PRIMARY KEY (child, parent)
            );
            CREATE INDEX entry_edge_parent ON "\(schema)".entry_edge (parent);
            \(resolveBlocked(schema))
            \(dropSettleAndClaim(schema))
            \(settleAndClaim(
                schema, outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text",
                columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate", dependencies: true
            ))
            """
        },
        // Responses entries keep (Docs/OfflineQueue.md, "Offline work in steps"): what an entry
        // asks to keep (`keep_response`, NULL for most, returned with its claim, so
        // `settle_and_claim` is made again with it), and a row per delivery that kept one,
        // written in the transaction that records the delivery and removed with the entry.
        // Whoever awaits an outcome listens on `<schema>.settled`, which a trigger notifies
        // when an entry is delivered or dies, and once per statement that removes entries.
        Migration(name: "v6-kept-responses") { schema in
            """
            ALTER TABLE "\(schema)".entry ADD COLUMN keep_response text;
            CREATE TABLE "\(schema)".entry_response (
                entry bigint PRIMARY KEY REFERENCES "\(schema)".entry (id) ON DELETE CASCADE,
                seal_key text,
                response bytea NOT NULL
            );
            CREATE FUNCTION "\(schema)".notify_settled() RETURNS trigger
            LANGUAGE plpgsql
            AS $$
            BEGIN
                PERFORM pg_notify(\(literal(settledChannel(schema))), '');
                RETURN NULL;
            END
            $$;
            CREATE TRIGGER entry_settled AFTER UPDATE OF state ON "\(schema)".entry
                FOR EACH ROW WHEN (NEW.state IN ('delivered', 'dead') AND OLD.state IS DISTINCT FROM NEW.state)
                EXECUTE FUNCTION "\(schema)".notify_settled();
            CREATE TRIGGER entry_removed AFTER DELETE ON "\(schema)".entry
                FOR EACH STATEMENT EXECUTE FUNCTION "\(schema)".notify_settled();
            \(dropSettleAndClaim(schema))
            \(settleAndClaim(
                schema, outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text",
                columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response", dependencies: true
            ))
            """
        },
        // Requests that take values from their parents' kept responses (ResponseReference): the
        // parents they read and whether the body does (`7,9 body`); and edits that coalesce
        // (EnqueueOptions.coalescingKey): the key, found through an index of the entries still
        // open under one. NULL for most, which the index never holds. Both are returned with
        // the claim (so `settle_and_claim` is made again), and `resolve_blocked` takes a
        // superseded parent for one purged.
        Migration(name: "v7-offline-steps") { schema in
            """
            ALTER TABLE "\(schema)".entry ADD COLUMN response_sources text, ADD COLUMN coalesce_key text;
            CREATE INDEX entry_coalesce ON "\(schema)".entry (coalesce_key)
                WHERE coalesce_key IS NOT NULL AND state IN ('pending', 'blocked', 'inflight');
            DROP FUNCTION "\(schema)".resolve_blocked(bigint[], double precision);
            \(resolveBlocked(schema))
            \(dropSettleAndClaim(schema))
            \(settleAndClaim(
                schema,
                outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text, o_response_sources text, o_coalesce_key text",
                columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response, e.response_sources, e.coalesce_key", dependencies: true
            ))
            """
        },
        // An entry's own delivery policy (EnqueueOptions.delivery; NULL for most, returned with
        // the claim), and conflicts: `settle_and_claim` records a conflict left for an operator
        // (`conflict`, which holds its group, so the group index holds it too) and one the
        // app's resolver dropped (`superseded`, whose children are decided as a purged
        // parent's); the `settled` trigger tells those awaiting outcomes of a drop.
        Migration(name: "v8-conflicts") { schema in
            """
            ALTER TABLE "\(schema)".entry ADD COLUMN delivery text;
            DROP INDEX "\(schema)".entry_group_open;
            CREATE INDEX entry_group_open ON "\(schema)".entry (group_key, id)
                WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight', 'blocked', 'conflict');
            DROP TRIGGER entry_settled ON "\(schema)".entry;
            CREATE TRIGGER entry_settled AFTER UPDATE OF state ON "\(schema)".entry
                FOR EACH ROW WHEN (NEW.state IN ('delivered', 'dead', 'superseded') AND OLD.state IS DISTINCT FROM NEW.state)
                EXECUTE FUNCTION "\(schema)".notify_settled();
            \(dropSettleAndClaim(schema))
            \(settleAndClaim(
                schema,
                outputs: ", o_seal_key text, o_seal bytea, o_traceparent text, o_tracestate text, o_keep_response text, o_response_sources text, o_coalesce_key text, o_delivery text",
                columns: ", e.seal_key, e.seal, e.traceparent, e.tracestate, e.keep_response, e.response_sources, e.coalesce_key, e.delivery",
                dependencies: true, conflicts: true
            ))
            """
        },
        // Flow control by origin (FlowControl): PostgresSchema+Flow.swift.
        Migration(name: "v9-origin-flow") { schema in originFlowMigration(schema) },
        // Limits by origin pattern (`https://*.example.com`): PostgresSchema+Flow.swift.
        Migration(name: "v10-origin-patterns") { schema in originPatternsMigration(schema) },
        // The activity per minute (the console's chart): PostgresQueueStore+Activity.swift.
        Migration(name: "v11-activity") { schema in activityMigration(schema) },
        // Retention's order: PostgresSchema+Retention.swift.
        Migration(name: "v12-retention") { schema in retentionMigration(schema) },
        // A token due within a microsecond of a claim's time counted, and a bucket's refill never
        // moved back: PostgresSchema+Flow.swift.
        Migration(name: "v13-flow-refill") { schema in flowRefillMigration(schema) },
        // One entry of a group in flight at a time: an older entry an operator retried while a
        // newer one of its group is in flight waits for that one's settlement (the model check
        // found both sent at once). PostgresSchema+Flow.swift.
        Migration(name: "v14-group-in-flight") { schema in groupInFlightMigration(schema) },
        // Origin health: a circuit per origin, opened by failures in a row, probed, closed by a
        // delivery: PostgresSchema+Health.swift.
        Migration(name: "v15-origin-health") { schema in originHealthMigration(schema) },
    ]

    /// The channel those awaiting outcomes listen on: `<schema>.settled`.
    static func settledChannel(_ schema: String) -> String { schema + ".settled" }

    /// `text` as an SQL string literal.
    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    /// `resolve_blocked(candidates, fleet)`: the blocked entries among `candidates` become what
    /// ``DependencyRule/verdict(parents:policy:)`` says (due when every parent is delivered, or
    /// dead and the policy proceeds; dead with the first parent, by id, that died or was purged
    /// unsent where the policy dies with it, or waits for a retry that can no longer come), and
    /// the children of each that died are decided next.
    private static func resolveBlocked(_ schema: String) -> String {
        """
        CREATE FUNCTION "\(schema)".resolve_blocked(candidates bigint[], fleet double precision) RETURNS void
        LANGUAGE plpgsql
        AS $$
        DECLARE
            died bigint[];
        BEGIN
            WHILE cardinality(candidates) > 0 LOOP
                WITH links AS (
                    SELECT g.child, g.parent, g.when_parent_dies AS policy,
                        CASE WHEN g.parent_delivered THEN 'delivered' WHEN p.state = 'superseded' THEN 'gone' ELSE coalesce(p.state, 'gone') END AS parent_state
                    FROM "\(schema)".entry_edge AS g
                    JOIN "\(schema)".entry AS c ON c.id = g.child AND c.state = 'blocked'
                    LEFT JOIN "\(schema)".entry AS p ON p.id = g.parent
                    WHERE g.child = ANY(candidates)
                ), verdict AS (
                    SELECT child,
                        (array_agg(parent ORDER BY parent) FILTER (WHERE parent_state IN ('dead', 'gone')
                            AND (policy = 'die' OR (parent_state = 'gone' AND policy = 'wait'))))[1] AS killer,
                        (array_agg(parent_state = 'gone' ORDER BY parent) FILTER (WHERE parent_state IN ('dead', 'gone')
                            AND (policy = 'die' OR (parent_state = 'gone' AND policy = 'wait'))))[1] AS purged,
                        bool_and(parent_state = 'delivered' OR (parent_state IN ('dead', 'gone') AND policy = 'proceed')) AS due
                    FROM links GROUP BY child
                ), released AS (
                    UPDATE "\(schema)".entry AS e SET state = 'pending'
                    FROM verdict AS v WHERE e.id = v.child AND e.state = 'blocked' AND v.killer IS NULL AND v.due
                    RETURNING e.id
                ), killed AS (
                    UPDATE "\(schema)".entry AS e SET state = 'dead', dead_reason = 'parentDead', finished_at = fleet, waiting_network = false,
                        last_error = 'entry ' || v.killer || ' it waits for '
                            || CASE WHEN v.purged THEN 'was purged before it was delivered' ELSE 'is dead' END || '; not sent'
                    FROM verdict AS v WHERE e.id = v.child AND e.state = 'blocked' AND v.killer IS NOT NULL
                    RETURNING e.id
                )
                SELECT array_agg(killed.id) INTO died FROM killed;
                SELECT coalesce(array_agg(g.child), '{}') INTO candidates
                    FROM "\(schema)".entry_edge AS g WHERE g.parent = ANY(coalesce(died, '{}'));
            END LOOP;
        END
        $$;
        """
    }

    /// A migration's statements: its text split at each `;` that ends a line outside a `$$` body.
    static func statements(_ sql: String) -> [String] {
        // A `;` inside a function's `$$ … $$` body ends none.
        var pieces: [String] = []
        var current = ""
        var quoted = false
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.components(separatedBy: "$$").count % 2 == 0 { quoted.toggle() }
            current += line + "\n"
            if !quoted && line.hasSuffix(";") {
                pieces.append(current)
                current = ""
            }
        }
        pieces.append(current)
        return pieces
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
