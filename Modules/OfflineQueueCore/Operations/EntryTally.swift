/// What a store counts for an overview beyond ``QueueCounts``: entries by group, name and
/// state over the newest rows (a bounded walk of the id order, however large the queue),
/// the entries waiting for the network, and the deliveries of the last minutes. The engine
/// makes a ``QueueOverview`` of it.
package struct EntryTally: Sendable, Hashable {
    /// A group (`nil`: entries without one), a name and a state.
    package struct Key: Sendable, Hashable {
        package var group: String?
        package var name: String
        package var state: EntryState

        package init(group: String?, name: String, state: EntryState) {
            self.group = group
            self.name = name
            self.state = state
        }
    }

    /// Entries by key, among the ``examined`` newest.
    package var counts: [Key: Int]
    /// How many of the newest entries were counted: fewer than asked for when that is all of them.
    package var examined: Int
    /// Pending entries waiting for the network to come back (not in flight).
    package var waitingForNetwork: Int
    /// Entries delivered in the last minute and the last five minutes, by the store's clock,
    /// among the newest delivered entries (``deliveryWindow``): close, not exact, when entries
    /// are delivered far out of order.
    package var deliveredLastMinute: Int
    package var deliveredLastFiveMinutes: Int

    /// How many of the newest delivered entries the throughput counts look at.
    package static let deliveryWindow = 10_000

    package init(counts: [Key: Int] = [:], examined: Int = 0, waitingForNetwork: Int = 0, deliveredLastMinute: Int = 0, deliveredLastFiveMinutes: Int = 0) {
        self.counts = counts
        self.examined = examined
        self.waitingForNetwork = waitingForNetwork
        self.deliveredLastMinute = deliveredLastMinute
        self.deliveredLastFiveMinutes = deliveredLastFiveMinutes
    }
}
