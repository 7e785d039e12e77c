/// Migration v12: the delivered and superseded rows by when they finished, the order retention
/// deletes in (`PostgresQueueStore.deleteDeliveredEntries(finishedBefore:)`), so each batch reads only
/// the rows it deletes. By `entry_state (state, id)` the last batch of a pass walked every
/// delivered row newer than the cutoff.
extension PostgresSchema {
    static func retentionMigration(_ schema: String) -> String {
        """
        CREATE INDEX entry_finished ON "\(schema)".entry (finished_at) WHERE state IN ('delivered', 'superseded');
        """
    }
}
