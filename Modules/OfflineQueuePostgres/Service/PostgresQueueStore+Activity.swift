import Foundation
import OfflineQueueCore
import PostgresNIO

/// The activity kept per minute (``ActivityMinute``): one statement to add, one to read.
extension PostgresQueueStore {
    /// Adds every minute and deletes the old ones in one statement (its own transaction); the
    /// rows of a minute two drainers add to at once are summed, as `ON CONFLICT` locks the row.
    func recordActivity(_ minutes: [ActivityMinute], keepingSince: Date) async throws(QueueError) {
        guard !readOnly, !minutes.isEmpty else { return }
        // Arrays of plain numbers, with -1 for a backlog not seen (counts are never negative).
        let numbers = minutes.map(\.number)
        let delivered = minutes.map { Int64($0.delivered) }
        let failed = minutes.map { Int64($0.failed) }
        let pending = minutes.map { Int64($0.pending ?? -1) }
        let due = minutes.map { Int64($0.due ?? -1) }
        let oldest = ActivityMinute.number(of: keepingSince)
        _ = try await writing { connection in
            try await connection.query(PostgresQuery(unsafeSQL: self.sql("""
                WITH added AS (
                    INSERT INTO §.activity_minute AS a (minute, delivered, failed, pending, due)
                    SELECT minute, delivered, failed, NULLIF(pending, -1), NULLIF(due, -1)
                    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS t(minute, delivered, failed, pending, due)
                    ON CONFLICT (minute) DO UPDATE SET delivered = a.delivered + excluded.delivered, failed = a.failed + excluded.failed,
                        pending = COALESCE(excluded.pending, a.pending), due = COALESCE(excluded.due, a.due)
                    RETURNING 1
                )
                DELETE FROM §.activity_minute WHERE minute < $6
                """)).with(numbers, delivered, failed, pending, due, oldest), logger: self.logger)
        }
    }

    func activity(since: Date) async throws(QueueError) -> [ActivityMinute] {
        let first = ActivityMinute.number(of: since)
        return try await reading { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: self.sql(
                "SELECT minute, delivered, failed, pending, due FROM §.activity_minute WHERE minute >= $1 ORDER BY minute"
            )).with(first), logger: self.logger)
            var minutes: [ActivityMinute] = []
            for try await (minute, delivered, failed, pending, due) in rows.decode((Int64, Int64, Int64, Int64?, Int64?).self) {
                minutes.append(ActivityMinute(
                    minute: ActivityMinute.start(of: minute), delivered: Int(delivered), failed: Int(failed),
                    pending: pending.map(Int.init), due: due.map(Int.init)
                ))
            }
            return minutes
        }
    }
}

/// Schema 11: the activity per minute (``ActivityMinute``, the console's chart): a row per
/// minute, added to by each drainer now and then, never on an entry's path. No entry row is
/// touched.
extension PostgresSchema {
    static func activityMigration(_ schema: String) -> String {
        """
        CREATE TABLE "\(schema)".activity_minute (
            minute bigint PRIMARY KEY,
            delivered bigint NOT NULL DEFAULT 0,
            failed bigint NOT NULL DEFAULT 0,
            pending bigint,
            due bigint
        );
        """
    }
}
