import Foundation
import GRDB

extension Schema {
    /// Migrations v9 to v13: sealing, trace context, dependencies, kept responses and offline
    /// steps (moved from Schema.swift as they were).
    static func registerLaterMigrations(_ migrator: inout DatabaseMigrator) {
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
    }
}
