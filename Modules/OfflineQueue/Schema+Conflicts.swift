import Foundation
import GRDB

/// Migrations from schema 14 on, each in a file of its own (Schema.swift holds 1 to 13).
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
    }
}
