import Foundation
import GRDB

extension Schema {
    /// Migrations v1 to v8: the entries, the boot clock, the file's stamp, dead reasons,
    /// pauses, leases, due times in the view and the lean insert (moved from Schema.swift as
    /// they were).
    static func registerFirstMigrations(_ migrator: inout DatabaseMigrator) {
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
    }
}
