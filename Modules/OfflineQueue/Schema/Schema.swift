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
    /// The first schema with the activity kept per minute (`activity_minute`).
    static let firstActivityVersion = version(after: "v16-activity")
    /// The first schema with the delivered rows in the order they finished (`entry_finished`),
    /// which retention deletes by.
    static let firstRetentionIndexVersion = version(after: "v17-retention")
    /// The first schema with origin health (circuits) in `origin_flow`.
    static let firstHealthVersion = version(after: "v18-origin-health")

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
    static let tables: Set<String> = ["entry", "entry_edge", "entry_response", "pause", "lease", "queue_meta", "queue_key", "origin_flow", "activity_minute", "grdb_migrations"]

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
        registerFirstMigrations(&migrator)
        registerLaterMigrations(&migrator)
        registerConflictMigrations(&migrator)
        return migrator
    }
}
