import Foundation
import GRDB

/// Migrations from schema 14 on, each in a file of its own (Schema+FirstMigrations.swift and
/// Schema+LaterMigrations.swift hold 1 to 13).
extension Schema {
    static func registerConflictMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v14-conflicts") { db in
            // An entry's own delivery policy (EnqueueOptions.delivery, stored as
            // EntryDelivery.stored; NULL for most, returned with the claim), and conflicts
            // (EntryState.conflict, allowed since schema 11) that hold their group's later
            // entries as an open entry does: the group index holds them too. A column added and
            // an index made again: no row is copied.
            try db.execute(sql: """
                ALTER TABLE entry ADD COLUMN delivery TEXT;
                DROP INDEX entry_group_open;
                CREATE INDEX entry_group_open ON entry(group_key, id)
                    WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight', 'blocked', 'conflict');
                DROP VIEW entry_view;
                \(entryView(adding: ", traceparent, tracestate, keep_response, response_sources, coalesce_key, delivery"))
                PRAGMA user_version = 14;
                """)
        }
        migrator.registerMigration("v15-origin-flow") { db in
            // Flow control by origin (FlowControl): a row only for an origin paused by a
            // Retry-After, shrunk by overloads or limited, read and written by the claim's
            // transaction. Times on the boot clock named by `boot`, with the pause's end as a
            // wall time for carrying it over a reboot. No entry row is touched.
            try db.execute(sql: """
                CREATE TABLE origin_flow (
                    origin TEXT PRIMARY KEY NOT NULL,
                    paused_until REAL,
                    paused_until_wall REAL,
                    pause_status INTEGER,
                    boot TEXT,
                    shrunk_to INTEGER,
                    successes INTEGER NOT NULL DEFAULT 0,
                    rate REAL,
                    burst INTEGER,
                    cap INTEGER,
                    tokens REAL NOT NULL DEFAULT 0,
                    refilled_at REAL NOT NULL DEFAULT 0
                ) WITHOUT ROWID;
                PRAGMA user_version = 15;
                """)
        }
        migrator.registerMigration("v16-activity") { db in
            // The console's chart (ActivityMinute): a row per minute, added to by each drainer
            // now and then, never on an entry's path; rows older than two hours are deleted by
            // the same writes. No entry row is touched.
            try db.execute(sql: """
                CREATE TABLE activity_minute (
                    minute INTEGER PRIMARY KEY NOT NULL,
                    delivered INTEGER NOT NULL DEFAULT 0,
                    failed INTEGER NOT NULL DEFAULT 0,
                    pending INTEGER,
                    due INTEGER
                );
                PRAGMA user_version = 16;
                """)
        }
        migrator.registerMigration("v17-retention") { db in
            // Retention's order (SQLiteQueueStore+Retention.swift): the delivered rows by when
            // they finished, so a pass reads only the rows it deletes. Without it each batch
            // walked every delivered row (the last one all those newer than the cutoff), in its
            // write transaction: seconds per batch at 10,000,000 entries.
            try db.execute(sql: """
                CREATE INDEX entry_finished ON entry(finished_at) WHERE state IN ('delivered', 'superseded');
                PRAGMA user_version = 17;
                """)
        }
        migrator.registerMigration("v18-origin-health") { db in
            // Origin health (OriginHealth): each origin's circuit beside its flow, in the same
            // row: the failures in a row and the last of them, when the next probe may go (on
            // the boot clock of `boot`, and as a wall time for a reboot), its wait, when it
            // opened; and a limit's own threshold. No entry row is touched.
            try db.execute(sql: """
                ALTER TABLE origin_flow ADD COLUMN open_after INTEGER;
                ALTER TABLE origin_flow ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE origin_flow ADD COLUMN last_failure TEXT;
                ALTER TABLE origin_flow ADD COLUMN open_until REAL;
                ALTER TABLE origin_flow ADD COLUMN open_until_wall REAL;
                ALTER TABLE origin_flow ADD COLUMN probe_wait REAL;
                ALTER TABLE origin_flow ADD COLUMN opened_at REAL;
                PRAGMA user_version = 18;
                """)
        }
    }
}
