import Foundation
import OfflineQueueCore
import PostgresNIO

/// The columns a ``QueueEntry`` is read from, in the order every query of the PostgreSQL store
/// selects them (listings, single entries, previews) and the schema's `settle_and_claim`
/// returns its claimed rows (as its `o_` columns, then its tag): the store's one map from
/// columns to fields.
///
/// A column added to the entry is a case here, a line in
/// ``PostgresQueueStore/entry(_:fleet:at:leaseOwner:)`` and a migration that replaces
/// `settle_and_claim` with one that returns it.
enum PostgresEntryColumn: Int, EntryColumnMap {
    case id, idempotencyKey, method, url, headers, body, bodyRef, bodyLength, scopes, name, groupKey, priority, timeoutMs
    case state, attempts, createdAt, budgetFrom, nextAttemptAt, lastAttemptAt, finishedAt, waitingNetwork
    case leaseOwner, leaseExpiresAt, lastStatus, lastError, responseExcerpt, deadReason
    case sealKey, seal, traceparent, tracestate, keepResponse, responseSources, coalesceKey, delivery

    /// The columns' names in the `entry` table, in order.
    static let names = columnNames()

    /// The columns to select, in order.
    static let selection = names.joined(separator: ", ")

    /// The position of `settle_and_claim`'s tag (`claimed`, `lost`, `reclaimed`), after the columns.
    static let tag = allCases.count
}

extension PostgresRandomAccessRow {
    /// The value of `column`, read at its position in ``PostgresEntryColumn``.
    func decode<T: PostgresDecodable>(_ column: PostgresEntryColumn, as type: T.Type = T.self) throws -> T {
        try self[column.rawValue].decode(T.self)
    }
}

extension PostgresQueueStore {
    /// An entry from a row of ``PostgresEntryColumn``, read when the fleet's clock said `fleet`
    /// and this host's clocks said `now`. Its budget's start and its due time are turned into
    /// this host's boot clock, which the lifecycle measures age on and waits and listings show by.
    static func entry(_ row: PostgresRow, fleet: Double, at now: QueueTime) throws -> QueueEntry {
        try entry(row.makeRandomAccess(), fleet: fleet, at: now)
    }

    /// An entry from the cells of a row whose first columns are ``PostgresEntryColumn``'s;
    /// `leaseOwner`, when given, is taken for the row's (a claim's entries share the drainer's
    /// one string rather than a copy a row).
    ///
    /// - Throws: ``UnknownStoredValue`` naming the row for a state or a dead reason this version
    ///   does not know: never read as something else.
    static func entry(_ cells: PostgresRandomAccessRow, fleet: Double, at now: QueueTime, leaseOwner: String? = nil) throws -> QueueEntry {
        let id = try cells.decode(.id, as: EntryID.self)
        let state = try UnknownStoredValue.state(cells.decode(.state), id: id)
        let budgetFrom = try cells.decode(.budgetFrom, as: Double.self)
        let next = try cells.decode(.nextAttemptAt, as: Double.self)
        let date = { (seconds: Double?) in seconds.map(Date.init(timeIntervalSince1970:)) }
        var entry = QueueEntry(
            id: id,
            idempotencyKey: try cells.decode(.idempotencyKey),
            method: try cells.decode(.method),
            url: try cells.decode(.url),
            headers: LineCoding.decodeHeaders(try cells.decode(.headers)),
            body: StoredBody(inline: try cells.decode(.body), file: try cells.decode(.bodyRef), length: try cells.decode(.bodyLength, as: Int64?.self).map(Int.init)),
            scopes: LineCoding.decodeScopes(try cells.decode(.scopes)),
            name: try cells.decode(.name),
            group: try cells.decode(.groupKey),
            priority: Int(try cells.decode(.priority, as: Int32.self)),
            timeout: try cells.decode(.timeoutMs, as: Int64?.self).map { .milliseconds($0) },
            state: state,
            attempts: Int(try cells.decode(.attempts, as: Int32.self)),
            createdAt: Date(timeIntervalSince1970: try cells.decode(.createdAt)),
            budgetStartedAt: Date(timeIntervalSince1970: budgetFrom),
            nextAttemptAt: Date(timeIntervalSince1970: next),
            lastAttemptAt: date(try cells.decode(.lastAttemptAt)),
            finishedAt: date(try cells.decode(.finishedAt)),
            waitingForNetwork: try cells.decode(.waitingNetwork),
            leaseOwner: try leaseOwner ?? cells.decode(.leaseOwner),
            leaseExpiresAt: date(try cells.decode(.leaseExpiresAt)),
            lastStatus: try cells.decode(.lastStatus, as: Int32?.self).map(Int.init),
            lastError: try cells.decode(.lastError),
            responseExcerpt: try cells.decode(.responseExcerpt),
            budgetUptime: now.uptime - (fleet - budgetFrom),
            deadReason: try UnknownStoredValue.deadReason(cells.decode(.deadReason), id: id),
            nextDue: state == .pending ? DueTime(boot: now.boot, uptime: now.uptime + (next - fleet)) : nil
        )
        if let key = try cells.decode(.sealKey, as: String?.self) {
            entry.seal = StoredSeal(keyID: key, blob: try cells.decode(.seal, as: Data?.self) ?? Data())
        }
        entry.traceContext = TraceContext(stored: try cells.decode(.traceparent), tracestate: try cells.decode(.tracestate))
        if let keep = try cells.decode(.keepResponse, as: String?.self) { entry.keepResponse = ResponseKeeping(stored: keep) }
        if let sources = try cells.decode(.responseSources, as: String?.self) {
            (entry.responseSources, entry.bodyTakesValues) = ResponseReference.sources(stored: sources)
        }
        entry.coalescingKey = try cells.decode(.coalesceKey, as: String?.self)
        if let delivery = try cells.decode(.delivery, as: String?.self) { entry.delivery = EntryDelivery(stored: delivery) }
        return entry
    }
}
