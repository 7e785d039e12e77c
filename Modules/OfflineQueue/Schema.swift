import Foundation
import GRDB

/// The queue's schema, as named, append-only migrations.
///
/// Never edit a registered migration: append one. A file's schema version is GRDB's record of
/// the migrations applied to it (`grdb_migrations`): how many of ``migrator``'s it has
/// completed, in order. A file whose record holds a migration this code does not know was
/// written by a newer Courier and is refused. (Migrations up to `v8-lean-insert` also set
/// `PRAGMA user_version`, which Courier does not read.)
enum Schema {
    /// The migrations' identifiers, in order: migration `n` (from 1) makes schema `n`.
    private static let identifiers = migrator.migrations

    /// The schema version this code writes and understands: how many migrations it knows.
    static let version = identifiers.count

    /// `PRAGMA application_id` of every Courier queue file: the ASCII bytes `CRIQ` ("Courier
    /// queue"), so `file(1)` and Courier itself can tell a queue from any other SQLite file.
    ///
    /// Files written before schema 3 carry 0, SQLite's default; opening one that holds only
    /// Courier's tables stamps it (migration `v3-application-id`).
    static let applicationID: Int32 = 0x4352_4951

    /// The last schema whose files carry no ``applicationID``.
    static let lastUnstampedVersion = version(after: "v3-application-id") - 1

    /// The first schema with the `dead_reason` column.
    static let firstDeadReasonVersion = version(after: "v4-dead-reason")

    /// The first schema with the `pause` table; a read-only queue of an older file has no pauses.
    static let firstPauseVersion = version(after: "v5-pauses")

    /// The first schema whose claims are rows of the `lease` table, read through `entry_view`.
    static let firstLeaseVersion = version(after: "v6-leases")

    /// The first schema whose `entry_view` shows the boot-clock due time (`due_uptime`, `clock_boot`).
    static let firstDueViewVersion = version(after: "v7-due-in-view")

    /// The first schema whose inserts touch only the row, its key and the claim order
    /// (`queue_meta` holds the id floor and the boot the open rows are on).
    static let firstLeanInsertVersion = version(after: "v8-lean-insert")

    /// The first schema with sealed entries, the queue's id and its key checks.
    static let firstSealVersion = version(after: "v9-sealing")

    /// The first schema with the entries' trace context (`traceparent`, `tracestate`).
    static let firstTraceVersion = version(after: "v10-trace-context")

    /// The first schema with entries that wait for others (`entry_edge`, the `blocked` state).
    static let firstDependencyVersion = version(after: "v11-dependencies")

    /// The first schema with kept responses (`entry.keep_response`, `entry_response`).
    static let firstKeptResponseVersion = version(after: "v12-kept-responses")

    /// The first schema with requests that take values from their parents' kept responses
    /// (`entry.response_sources`) and edits that coalesce (`entry.coalesce_key`).
    static let firstResponseSourcesVersion = version(after: "v13-offline-steps")

    /// The first schema with entries' own delivery policies (`entry.delivery`) and conflicts
    /// that hold their group.
    static let firstConflictVersion = version(after: "v14-conflicts")
    /// The first schema with flow control by origin (`origin_flow`).
    static let firstFlowVersion = version(after: "v15-origin-flow")

    /// The states of `entry_group_open`'s rows (schema 14 on): a group's open entries, which its
    /// later entries wait behind.
    static let groupOpenStates = "('pending', 'inflight', 'blocked', 'conflict')"

    /// The oldest schema a read-only queue reads as it is: it cannot migrate, and schema 3
    /// changed only the file header, not a column.
    static let oldestReadOnlyVersion = version(after: "v2-boot-clock")

    /// The schema a file is at once `migration` is applied.
    private static func version(after migration: String) -> Int {
        guard let index = identifiers.firstIndex(of: migration) else { preconditionFailure("no migration \(migration)") }
        return index + 1
    }

    /// A file's schema, as its record of applied migrations says.
    struct Recorded {
        /// How many of this code's migrations the file has completed, in order.
        var version: Int
        /// How many migrations the file records, this code's and any other.
        var applied: Int
        /// Whether the file records a migration this code does not know: a newer Courier's.
        var isNewer: Bool
    }

    /// The schema of the file open on `db` (none recorded for a new, empty file).
    static func recorded(_ db: Database) throws -> Recorded {
        let applied = try migrator.appliedIdentifiers(db)
        return Recorded(
            version: identifiers.prefix { applied.contains($0) }.count,
            applied: applied.count,
            isNewer: !applied.isSubset(of: identifiers)
        )
    }

    /// The tables Courier creates; any other (outside SQLite's own) marks a foreign file.
    static let tables: Set<String> = ["entry", "entry_edge", "entry_response", "pause", "lease", "queue_meta", "queue_key", "origin_flow", "grdb_migrations"]

    /// `entry_view` as schema 9 made it, its entry columns followed by `columns` (each after a
    /// comma): an entry and its lease, in flight where a lease holds it.
    static func entryView(adding columns: String = "") -> String {
        """
        CREATE VIEW entry_view AS SELECT
            entry.id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
            priority, timeout_ms, CASE WHEN lease.entry_id IS NULL THEN state ELSE 'inflight' END AS state,
            state AS row_state,
            attempts, created_at, budget_from, next_attempt_at,
            COALESCE(lease.attempt_wall, last_attempt_at) AS last_attempt_at, finished_at, waiting_network,
            lease.owner AS lease_owner, lease.until_wall AS lease_expires_at, last_status, last_error,
            response_excerpt, budget_uptime, dead_reason, due_uptime, clock_boot, seal_key, seal\(columns)
        FROM entry LEFT JOIN lease ON lease.entry_id = entry.id;
        """
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-entries") { db in
            try db.execute(sql: """
                CREATE TABLE entry (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    method TEXT NOT NULL,
                    url TEXT NOT NULL,
                    headers TEXT NOT NULL,
                    body BLOB,
                    body_file TEXT,
                    body_length INTEGER,
                    scopes TEXT NOT NULL,
                    name TEXT NOT NULL,
                    group_key TEXT,
                    priority INTEGER NOT NULL DEFAULT 0,
                    timeout_ms INTEGER,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'inflight', 'delivered', 'dead')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    budget_from REAL NOT NULL,
                    next_attempt_at REAL NOT NULL,
                    last_attempt_at REAL,
                    finished_at REAL,
                    waiting_network INTEGER NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    lease_expires_at REAL,
                    last_status INTEGER,
                    last_error TEXT,
                    response_excerpt TEXT
                );
                -- Claim order: priority first, then age, among pending entries only.
                CREATE INDEX entry_pending ON entry(priority DESC, id) WHERE state = 'pending';
                -- "Is an earlier entry of this group still open?" for FIFO per group.
                CREATE INDEX entry_group_open ON entry(group_key, id)
                    WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight');
                -- Leases that lapsed.
                CREATE INDEX entry_lease ON entry(lease_expires_at) WHERE state = 'inflight';
                -- Entries waiting only for the network, woken when it is back.
                CREATE INDEX entry_network_wait ON entry(id) WHERE state = 'pending' AND waiting_network = 1;
                -- The next due time.
                CREATE INDEX entry_due ON entry(next_attempt_at) WHERE state = 'pending';
                -- Counts, listings and purges by state.
                CREATE INDEX entry_state ON entry(state, id);
                """)
            try db.execute(sql: "PRAGMA user_version = 1")
        }
        migrator.registerMigration("v2-boot-clock") { db in
            // Time rules move to the boot clock (see QueueTime): every open row carries the boot
            // its readings belong to, when its age budget started, when it is due and when its
            // lease lapses on that boot's clock. Rows of v1 get no boot, so the first drain
            // carries them over from their wall-clock times.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN clock_boot TEXT;
                ALTER TABLE entry ADD COLUMN budget_uptime REAL NOT NULL DEFAULT 0;
                ALTER TABLE entry ADD COLUMN due_uptime REAL NOT NULL DEFAULT 0;
                ALTER TABLE entry ADD COLUMN lease_uptime REAL;
                ALTER TABLE entry ADD COLUMN attempt_uptime REAL;
                DROP INDEX entry_due;
                DROP INDEX entry_lease;
                -- The next due time, on the boot clock.
                CREATE INDEX entry_due ON entry(due_uptime) WHERE state = 'pending';
                -- Leases that lapsed, and the owners of entries in flight.
                CREATE INDEX entry_lease ON entry(lease_owner, lease_uptime) WHERE state = 'inflight';
                -- Open rows whose clock readings belong to another boot, or cannot be trusted.
                CREATE INDEX entry_clock ON entry(clock_boot) WHERE state IN ('pending', 'inflight');
                CREATE INDEX entry_budget ON entry(budget_uptime) WHERE state IN ('pending', 'inflight');
                PRAGMA user_version = 2;
                """)
        }
        migrator.registerMigration("v3-application-id") { db in
            // From now on the file says it is a queue: opening refuses a file that carries
            // another application's id, whatever its user_version.
            try db.execute(sql: "PRAGMA application_id = \(applicationID)")
            try db.execute(sql: "PRAGMA user_version = 3")
        }
        migrator.registerMigration("v4-dead-reason") { db in
            // Why an entry is dead becomes a column of its own. Before, it was the prefix of
            // `last_error` ("expired: older than …"): rows of earlier versions are split.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN dead_reason TEXT
                    CHECK (dead_reason IN ('rejected', 'attemptsExhausted', 'expired', 'unsendable'));
                UPDATE entry SET
                    dead_reason = substr(last_error, 1, instr(last_error, ': ') - 1),
                    last_error = substr(last_error, instr(last_error, ': ') + 2)
                WHERE state = 'dead'
                    AND substr(last_error, 1, instr(last_error, ': ') - 1) IN ('rejected', 'attemptsExhausted', 'expired', 'unsendable');
                PRAGMA user_version = 4;
                """)
        }
        migrator.registerMigration("v5-pauses") { db in
            // An operator's pause, kept in the file so every drainer of every process sees it
            // at its next claim: a row with a group pauses that group, the row without one
            // (at most one, by the partial unique index) the whole queue.
            try db.execute(sql: """
                CREATE TABLE pause (
                    group_key TEXT UNIQUE,
                    paused_at REAL NOT NULL
                );
                CREATE UNIQUE INDEX pause_queue ON pause((group_key IS NULL)) WHERE group_key IS NULL;
                PRAGMA user_version = 5;
                """)
        }
        migrator.registerMigration("v6-leases") { db in
            // A claim becomes a row of its own instead of a rewrite of the entry: claiming
            // inserts a small `lease` row per entry and leaves the entry's row and its indexes
            // alone, and the settlement rewrites the entry once (not twice, with every index
            // entry the row has). An entry in flight is a `pending` row with a lease; `entry_view` shows it
            // as `inflight`, with the lease's owner, expiry and attempt time, as before.
            // Claims of schema 5 move over as they are, so their owners' liveness still decides.
            try db.execute(sql: """
                CREATE TABLE lease (
                    entry_id INTEGER PRIMARY KEY,
                    owner TEXT NOT NULL,
                    boot TEXT,
                    until_uptime REAL NOT NULL,
                    until_wall REAL NOT NULL,
                    attempt_wall REAL NOT NULL,
                    attempt_uptime REAL NOT NULL
                );
                INSERT INTO lease (entry_id, owner, boot, until_uptime, until_wall, attempt_wall, attempt_uptime)
                    SELECT id, COALESCE(lease_owner, ''), clock_boot, COALESCE(lease_uptime, 0), COALESCE(lease_expires_at, 0),
                        COALESCE(last_attempt_at, 0), COALESCE(attempt_uptime, 0)
                    FROM entry WHERE state = 'inflight';
                UPDATE entry SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, lease_uptime = NULL
                    WHERE state = 'inflight';
                DROP INDEX entry_lease;
                CREATE VIEW entry_view AS SELECT
                    entry.id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
                    priority, timeout_ms, CASE WHEN lease.entry_id IS NULL THEN state ELSE 'inflight' END AS state,
                    state AS row_state,
                    attempts, created_at, budget_from, next_attempt_at,
                    COALESCE(lease.attempt_wall, last_attempt_at) AS last_attempt_at, finished_at, waiting_network,
                    lease.owner AS lease_owner, lease.until_wall AS lease_expires_at, last_status, last_error,
                    response_excerpt, budget_uptime, dead_reason
                FROM entry LEFT JOIN lease ON lease.entry_id = entry.id;
                PRAGMA user_version = 6;
                """)
        }
        migrator.registerMigration("v7-due-in-view") { db in
            // Listings show when an entry is due by the boot clock, read by the clock of the
            // moment they are shown, rather than the wall time the process that set the backoff
            // read (a process whose wall clock was days off stored a wrong one).
            try db.execute(sql: """
                DROP VIEW entry_view;
                CREATE VIEW entry_view AS SELECT
                    entry.id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
                    priority, timeout_ms, CASE WHEN lease.entry_id IS NULL THEN state ELSE 'inflight' END AS state,
                    state AS row_state,
                    attempts, created_at, budget_from, next_attempt_at,
                    COALESCE(lease.attempt_wall, last_attempt_at) AS last_attempt_at, finished_at, waiting_network,
                    lease.owner AS lease_owner, lease.until_wall AS lease_expires_at, last_status, last_error,
                    response_excerpt, budget_uptime, dead_reason, due_uptime, clock_boot
                FROM entry LEFT JOIN lease ON lease.entry_id = entry.id;
                PRAGMA user_version = 7;
                """)
        }
        migrator.registerMigration("v8-lean-insert") { db in
            // An insert enters only the row, its idempotency key and the claim order: each
            // b-tree a row enters is a page written at its commit (Docs/Benchmarks.md):
            // - no AUTOINCREMENT (its `sqlite_sequence` row was rewritten at every insert): an
            //   insert takes one more than the largest id there is or ever was, the largest
            //   deleted one kept in `queue_meta.id_floor` by a trigger, so no id is used twice;
            // - no `entry_clock`: `queue_meta.clock_boot` names the boot every open row is on
            //   (a writer of another boot clears it), so a drain carries rows over only when
            //   it is not its own;
            // - no `entry_budget`: rows whose readings lie in this boot's future are rebased
            //   at a drain's start, found through the claim order's index;
            // - `entry_state` holds finished rows only, `entry_due` rows that were given a wait
            //   (a backoff, a later start, the network's return): a new row is due from its
            //   start, found through the claim order's index.
            try db.execute(sql: """
                DROP VIEW entry_view;
                CREATE TABLE entry_lean (
                    id INTEGER PRIMARY KEY,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    method TEXT NOT NULL,
                    url TEXT NOT NULL,
                    headers TEXT NOT NULL,
                    body BLOB,
                    body_file TEXT,
                    body_length INTEGER,
                    scopes TEXT NOT NULL,
                    name TEXT NOT NULL,
                    group_key TEXT,
                    priority INTEGER NOT NULL DEFAULT 0,
                    timeout_ms INTEGER,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'inflight', 'delivered', 'dead')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    budget_from REAL NOT NULL,
                    next_attempt_at REAL NOT NULL,
                    last_attempt_at REAL,
                    finished_at REAL,
                    waiting_network INTEGER NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    lease_expires_at REAL,
                    last_status INTEGER,
                    last_error TEXT,
                    response_excerpt TEXT,
                    clock_boot TEXT,
                    budget_uptime REAL NOT NULL DEFAULT 0,
                    due_uptime REAL NOT NULL DEFAULT 0,
                    lease_uptime REAL,
                    attempt_uptime REAL,
                    dead_reason TEXT CHECK (dead_reason IN ('rejected', 'attemptsExhausted', 'expired', 'unsendable'))
                );
                INSERT INTO entry_lean SELECT
                    id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
                    priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at, last_attempt_at,
                    finished_at, waiting_network, lease_owner, lease_expires_at, last_status, last_error, response_excerpt,
                    clock_boot, budget_uptime, due_uptime, lease_uptime, attempt_uptime, dead_reason
                FROM entry;
                CREATE TABLE queue_meta (
                    only INTEGER PRIMARY KEY CHECK (only = 1),
                    id_floor INTEGER NOT NULL,
                    clock_boot TEXT
                );
                INSERT INTO queue_meta (only, id_floor, clock_boot)
                    VALUES (1, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'entry'), 0), NULL);
                DROP TABLE entry;
                DELETE FROM sqlite_sequence WHERE name = 'entry';
                ALTER TABLE entry_lean RENAME TO entry;
                -- Claim order: priority first, then age, among pending entries only.
                CREATE INDEX entry_pending ON entry(priority DESC, id) WHERE state = 'pending';
                -- "Is an earlier entry of this group still open?" for FIFO per group.
                CREATE INDEX entry_group_open ON entry(group_key, id)
                    WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight');
                -- Entries waiting only for the network, woken when it is back.
                CREATE INDEX entry_network_wait ON entry(id) WHERE state = 'pending' AND waiting_network = 1;
                -- The next due time of entries given a wait, on the boot clock.
                CREATE INDEX entry_due ON entry(due_uptime) WHERE state = 'pending' AND due_uptime > budget_uptime;
                -- Counts, listings and purges of finished entries.
                CREATE INDEX entry_state ON entry(state, id) WHERE state <> 'pending';
                -- The largest id deleted, when it was the largest there was: never given again.
                CREATE TRIGGER entry_id_floor AFTER DELETE ON entry
                WHEN OLD.id > (SELECT id_floor FROM queue_meta) AND NOT EXISTS (SELECT 1 FROM entry WHERE id > OLD.id)
                BEGIN
                    UPDATE queue_meta SET id_floor = OLD.id;
                END;
                CREATE VIEW entry_view AS SELECT
                    entry.id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
                    priority, timeout_ms, CASE WHEN lease.entry_id IS NULL THEN state ELSE 'inflight' END AS state,
                    state AS row_state,
                    attempts, created_at, budget_from, next_attempt_at,
                    COALESCE(lease.attempt_wall, last_attempt_at) AS last_attempt_at, finished_at, waiting_network,
                    lease.owner AS lease_owner, lease.until_wall AS lease_expires_at, last_status, last_error,
                    response_excerpt, budget_uptime, dead_reason, due_uptime, clock_boot
                FROM entry LEFT JOIN lease ON lease.entry_id = entry.id;
                PRAGMA user_version = 8;
                """)
        }
        migrator.registerMigration("v9-sealing") { db in
            // Sealing at rest (Docs/Encryption.md): an entry sealed under a key keeps the key's
            // id and its sealed target and headers (`NULL` for an entry in clear); the queue
            // keeps its own id, bound into every sealed value, and a key-check value per key id
            // it sealed with, so that a wrong key is told before an entry is touched.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN seal_key TEXT;
                ALTER TABLE entry ADD COLUMN seal BLOB;
                ALTER TABLE queue_meta ADD COLUMN queue_uuid BLOB;
                UPDATE queue_meta SET queue_uuid = randomblob(16);
                CREATE TABLE queue_key (
                    key_id TEXT PRIMARY KEY,
                    check_value TEXT NOT NULL
                ) WITHOUT ROWID;
                DROP VIEW entry_view;
                \(entryView())
                PRAGMA user_version = 9;
                """)
        }
        migrator.registerMigration("v10-trace-context") { db in
            // The W3C trace context an entry was enqueued in (Docs/Observability.md): clear
            // metadata beside the request, never among its (possibly sealed) headers. Rows of
            // earlier versions have none.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN traceparent TEXT;
                ALTER TABLE entry ADD COLUMN tracestate TEXT;
                DROP VIEW entry_view;
                \(entryView(adding: ", traceparent, tracestate"))
                PRAGMA user_version = 10;
                """)
        }
        migrator.registerMigration("v11-dependencies") { db in
            // Entries that wait for others (Docs/OfflineQueue.md, "Offline work in steps"): an
            // `entry_edge` row per link, and a `blocked` state outside the claim order's index,
            // so a claim walks what it walked before however many entries wait. SQLite cannot
            // change a CHECK in place: the table is copied once, its states and dead reasons
            // widened (with the states later steps of that work keep, so this is the last copy),
            // and a blocked entry holds its group's later entries as a pending one does.
            let columns = """
                id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
                priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at, last_attempt_at,
                finished_at, waiting_network, lease_owner, lease_expires_at, last_status, last_error, response_excerpt,
                clock_boot, budget_uptime, due_uptime, lease_uptime, attempt_uptime, dead_reason, seal_key, seal,
                traceparent, tracestate
                """
            try db.execute(sql: """
                DROP VIEW entry_view;
                DROP TRIGGER entry_id_floor;
                CREATE TABLE entry_v11 (
                    id INTEGER PRIMARY KEY,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    method TEXT NOT NULL,
                    url TEXT NOT NULL,
                    headers TEXT NOT NULL,
                    body BLOB,
                    body_file TEXT,
                    body_length INTEGER,
                    scopes TEXT NOT NULL,
                    name TEXT NOT NULL,
                    group_key TEXT,
                    priority INTEGER NOT NULL DEFAULT 0,
                    timeout_ms INTEGER,
                    state TEXT NOT NULL
                        CHECK (state IN ('pending', 'inflight', 'delivered', 'dead', 'blocked', 'conflict', 'superseded')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    budget_from REAL NOT NULL,
                    next_attempt_at REAL NOT NULL,
                    last_attempt_at REAL,
                    finished_at REAL,
                    waiting_network INTEGER NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    lease_expires_at REAL,
                    last_status INTEGER,
                    last_error TEXT,
                    response_excerpt TEXT,
                    clock_boot TEXT,
                    budget_uptime REAL NOT NULL DEFAULT 0,
                    due_uptime REAL NOT NULL DEFAULT 0,
                    lease_uptime REAL,
                    attempt_uptime REAL,
                    dead_reason TEXT
                        CHECK (dead_reason IN ('rejected', 'attemptsExhausted', 'expired', 'unsendable', 'parentDead', 'conflict')),
                    seal_key TEXT,
                    seal BLOB,
                    traceparent TEXT,
                    tracestate TEXT
                );
                INSERT INTO entry_v11 (\(columns)) SELECT \(columns) FROM entry;
                DROP TABLE entry;
                ALTER TABLE entry_v11 RENAME TO entry;
                -- Claim order: priority first, then age, among pending entries only.
                CREATE INDEX entry_pending ON entry(priority DESC, id) WHERE state = 'pending';
                -- "Is an earlier entry of this group still open?" for FIFO per group.
                CREATE INDEX entry_group_open ON entry(group_key, id)
                    WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight', 'blocked');
                -- Entries waiting only for the network, woken when it is back.
                CREATE INDEX entry_network_wait ON entry(id) WHERE state = 'pending' AND waiting_network = 1;
                -- The next due time of entries given a wait, on the boot clock.
                CREATE INDEX entry_due ON entry(due_uptime) WHERE state = 'pending' AND due_uptime > budget_uptime;
                -- Counts, listings and purges of entries not pending (blocked ones among them).
                CREATE INDEX entry_state ON entry(state, id) WHERE state <> 'pending';
                CREATE TRIGGER entry_id_floor AFTER DELETE ON entry
                WHEN OLD.id > (SELECT id_floor FROM queue_meta) AND NOT EXISTS (SELECT 1 FROM entry WHERE id > OLD.id)
                BEGIN
                    UPDATE queue_meta SET id_floor = OLD.id;
                END;
                -- What an entry waits for: one row per link, with the child's policy and whether
                -- the parent was delivered (kept once retention removes the parent).
                CREATE TABLE entry_edge (
                    child INTEGER NOT NULL,
                    parent INTEGER NOT NULL,
                    when_parent_dies TEXT NOT NULL CHECK (when_parent_dies IN ('die', 'wait', 'proceed')),
                    parent_delivered INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (child, parent)
                ) WITHOUT ROWID;
                -- The children of a settled, retried or purged entry.
                CREATE INDEX entry_edge_parent ON entry_edge(parent);
                -- An entry's links go with it.
                CREATE TRIGGER entry_edge_gone AFTER DELETE ON entry
                BEGIN
                    DELETE FROM entry_edge WHERE child = OLD.id;
                END;
                \(entryView(adding: ", traceparent, tracestate"))
                PRAGMA user_version = 11;
                """)
        }
        migrator.registerMigration("v12-kept-responses") { db in
            // Responses entries keep (Docs/OfflineQueue.md, "Offline work in steps"): what an
            // entry asks to keep (`keep_response`, NULL for most), and a row per delivery that
            // kept one, written in the transaction that records the delivery and removed with
            // the entry. A column added and a table made: nothing is copied. The links of a
            // delivered entry are marked by a trigger of the delivering statement.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN keep_response TEXT;
                DROP VIEW entry_view;
                \(entryView(adding: ", traceparent, tracestate, keep_response"))
                CREATE TABLE entry_response (
                    entry INTEGER PRIMARY KEY,
                    seal_key TEXT,
                    response BLOB NOT NULL
                );
                DROP TRIGGER entry_edge_gone;
                -- An entry's links and kept response go with it.
                CREATE TRIGGER entry_edge_gone AFTER DELETE ON entry
                BEGIN
                    DELETE FROM entry_edge WHERE child = OLD.id;
                    DELETE FROM entry_response WHERE entry = OLD.id;
                END;
                -- A delivered entry's links say so, in the statement that delivers it (schema 11
                -- marked them in a statement of their own, at every settlement).
                CREATE TRIGGER entry_delivered AFTER UPDATE OF state ON entry WHEN NEW.state = 'delivered'
                BEGIN
                    UPDATE entry_edge SET parent_delivered = 1 WHERE parent = NEW.id;
                END;
                PRAGMA user_version = 12;
                """)
        }
        migrator.registerMigration("v13-offline-steps") { db in
            // Requests that take values from their parents' kept responses (ResponseReference):
            // the parents they read and whether the body does (`7,9 body`); and edits that
            // coalesce (EnqueueOptions.coalescingKey): the key, found through an index of the
            // entries still waiting under one. NULL for most, which the index never holds.
            // Columns added: nothing is copied.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN response_sources TEXT;
                ALTER TABLE entry ADD COLUMN coalesce_key TEXT;
                CREATE INDEX entry_coalesce ON entry(coalesce_key) WHERE coalesce_key IS NOT NULL AND state IN ('pending', 'blocked');
                DROP VIEW entry_view;
                \(entryView(adding: ", traceparent, tracestate, keep_response, response_sources, coalesce_key"))
                PRAGMA user_version = 13;
                """)
        }
        registerConflictMigrations(&migrator)
        return migrator
    }
}
