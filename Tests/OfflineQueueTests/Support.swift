import Foundation
@testable import OfflineQueue
import QueueTestSupport
import Testing
import TestSupport

/// Expects opening the file at `path`, for writing and read-only, to throw `corruptDatabase`
/// naming it with a reason that `matches`, and to leave it byte for byte, with no log beside it.
func expectRefused(
    _ path: String, server: TestHTTPServer, reason matches: (String) -> Bool, sourceLocation: SourceLocation = #_sourceLocation
) {
    let before = FileManager.default.contents(atPath: path)
    for readOnly in [false, true] {
        #expect(sourceLocation: sourceLocation) {
            _ = try makeQueue(path: path, server: server) { $0.readOnly = readOnly }
        } throws: { error in
            guard let error = error as? QueueError, error.kind == .corruptDatabase, let reason = error.reason else { return false }
            return error.path == path && matches(reason)
        }
    }
    #expect(FileManager.default.contents(atPath: path) == before, "not a byte changed", sourceLocation: sourceLocation)
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"), sourceLocation: sourceLocation)
}

/// SQL that takes a file of this version back to schema 13, as Courier wrote it before
/// entries had delivery policies of their own and conflicts held their groups: schema 15's
/// table and schema 14's column gone, the group index as schema 11 made it (and schema 16's
/// activity table, schema 17's retention index, schema 18's circuits, whose columns go with
/// `origin_flow`).
let backToSchema13 = """
    DELETE FROM grdb_migrations WHERE identifier = 'v18-origin-health';
    DROP INDEX entry_finished;
    DELETE FROM grdb_migrations WHERE identifier = 'v17-retention';
    DROP TABLE activity_minute;
    DELETE FROM grdb_migrations WHERE identifier = 'v16-activity';
    DROP TABLE origin_flow;
    DELETE FROM grdb_migrations WHERE identifier = 'v15-origin-flow';
    DROP VIEW entry_view;
    ALTER TABLE entry DROP COLUMN delivery;
    DROP INDEX entry_group_open;
    CREATE INDEX entry_group_open ON entry(group_key, id) WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight', 'blocked');
    \(Schema.entryView(adding: ", traceparent, tracestate, keep_response, response_sources, coalesce_key"))
    DELETE FROM grdb_migrations WHERE identifier = 'v14-conflicts';
    PRAGMA user_version = 13;

    """

/// SQL that takes a file of this version back to schema 12, as Courier wrote it before
/// requests took values from their parents' responses and edits coalesced: schema 13's
/// columns and index gone.
let backToSchema12 = backToSchema13 + """
    DROP VIEW entry_view;
    DROP INDEX entry_coalesce;
    ALTER TABLE entry DROP COLUMN response_sources;
    ALTER TABLE entry DROP COLUMN coalesce_key;
    \(Schema.entryView(adding: ", traceparent, tracestate, keep_response"))
    DELETE FROM grdb_migrations WHERE identifier = 'v13-offline-steps';
    PRAGMA user_version = 12;

    """

/// SQL that takes a file of this version back to schema 11, as Courier wrote it before entries
/// kept responses: schema 12's column, table and view gone, the trigger as schema 11 made it.
let backToSchema11 = backToSchema12 + """
    DROP VIEW entry_view;
    DROP TRIGGER entry_delivered;
    DROP TRIGGER entry_edge_gone;
    CREATE TRIGGER entry_edge_gone AFTER DELETE ON entry BEGIN DELETE FROM entry_edge WHERE child = OLD.id; END;
    DROP TABLE entry_response;
    ALTER TABLE entry DROP COLUMN keep_response;
    \(Schema.entryView(adding: ", traceparent, tracestate"))
    DELETE FROM grdb_migrations WHERE identifier = 'v12-kept-responses';
    PRAGMA user_version = 11;

    """

/// SQL that takes a file of this version back to schema 10, as Courier wrote it before entries
/// could wait for others: schema 11's links gone, a group's open entries as schema 10 indexed
/// them (the entry table keeps schema 11's wider checks, which no schema 10 row breaks).
let backToSchema10 = backToSchema11 + """
    DROP TRIGGER entry_edge_gone; DROP TABLE entry_edge;
    DROP INDEX entry_group_open;
    CREATE INDEX entry_group_open ON entry(group_key, id) WHERE group_key IS NOT NULL AND state IN ('pending', 'inflight');
    DELETE FROM grdb_migrations WHERE identifier = 'v11-dependencies';
    PRAGMA user_version = 10;

    """

/// SQL that takes a file of this version back to schema 9, as Courier wrote it before entries
/// kept a trace context: schema 10's columns gone, its view as schema 9 had it.
let backToSchema9 = backToSchema10 + """
    DROP VIEW entry_view;
    ALTER TABLE entry DROP COLUMN traceparent; ALTER TABLE entry DROP COLUMN tracestate;
    \(Schema.entryView())
    DELETE FROM grdb_migrations WHERE identifier = 'v10-trace-context';
    PRAGMA user_version = 9;

    """

/// SQL that takes a file of this version back to schema 8, as a test of an older file runs
/// first: schema 9's sealing columns, queue id and key table gone, its view as schema 8 had it.
let backToSchema8 = backToSchema9 + """
    DROP VIEW entry_view;
    ALTER TABLE entry DROP COLUMN seal_key; ALTER TABLE entry DROP COLUMN seal;
    ALTER TABLE queue_meta DROP COLUMN queue_uuid; DROP TABLE queue_key;
    CREATE VIEW entry_view AS SELECT
        entry.id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name, group_key,
        priority, timeout_ms, CASE WHEN lease.entry_id IS NULL THEN state ELSE 'inflight' END AS state,
        state AS row_state,
        attempts, created_at, budget_from, next_attempt_at,
        COALESCE(lease.attempt_wall, last_attempt_at) AS last_attempt_at, finished_at, waiting_network,
        lease.owner AS lease_owner, lease.until_wall AS lease_expires_at, last_status, last_error,
        response_excerpt, budget_uptime, dead_reason, due_uptime, clock_boot
    FROM entry LEFT JOIN lease ON lease.entry_id = entry.id;
    DELETE FROM grdb_migrations WHERE identifier = 'v9-sealing';
    PRAGMA user_version = 8;
    """
