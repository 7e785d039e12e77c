import Foundation
import GRDB

/// The columns a ``QueueEntry`` is read from, in the order every query of the SQLite store
/// selects them (listings, single entries, previews, claims): the store's one map from columns
/// to fields. A column added to `entry_view` is a case here and a line in
/// ``QueueEntry/init(row:path:)``.
enum EntryColumn: Int, EntryColumnMap {
    case id, idempotencyKey, method, url, headers, body, bodyFile, bodyLength, scopes, name, groupKey, priority, timeoutMs
    case state, attempts, createdAt, budgetFrom, nextAttemptAt, lastAttemptAt, finishedAt, waitingNetwork
    case leaseOwner, leaseExpiresAt, lastStatus, lastError, responseExcerpt, budgetUptime, deadReason, dueUptime, clockBoot
    case sealKey, seal, traceparent, tracestate, keepResponse, responseSources, coalesceKey, delivery

    private static let names = columnNames()

    /// The column's name in `entry` and `entry_view`.
    var name: String { Self.names[rawValue] }

    /// The first schema whose entries, as ``SQLiteQueueStore/entrySource`` shows them, have the
    /// column: a file of an older one, opened read-only, reads it as `NULL`.
    var firstVersion: Int {
        switch self {
        case .deadReason: Schema.firstDeadReasonVersion
        case .dueUptime, .clockBoot: Schema.firstDueViewVersion
        case .sealKey, .seal: Schema.firstSealVersion
        case .traceparent, .tracestate: Schema.firstTraceVersion
        case .keepResponse: Schema.firstKeptResponseVersion
        case .responseSources, .coalesceKey: Schema.firstResponseSourcesVersion
        case .delivery: Schema.firstConflictVersion
        default: 1
        }
    }

    /// The columns to select from a file of schema `version`: those it lacks read as `NULL`.
    static func selection(readingVersion version: Int) -> String {
        allCases.map { $0.firstVersion <= version ? $0.name : "NULL AS \($0.name)" }.joined(separator: ", ")
    }

    /// The columns a claim selects from `entry` aliased `e`: each row as the claim leaves it, in
    /// flight until the statement's `:untilWall`, attempted at its `:wall` (the owner is set on
    /// each entry afterwards, one string for all).
    static let claimSelection: String = allCases.map { column in
        let value: String? = switch column {
        case .state: "'inflight'"
        case .leaseOwner, .dueUptime, .clockBoot: "NULL"
        case .leaseExpiresAt: ":untilWall"
        case .lastAttemptAt: ":wall"
        default: nil
        }
        return value.map { "\($0) AS \(column.name)" } ?? "e." + column.name
    }.joined(separator: ", ")
}

extension Row {
    /// The value of `column`, read at its position in ``EntryColumn``.
    subscript<Value: DatabaseValueConvertible & StatementColumnConvertible>(_ column: EntryColumn) -> Value {
        self[column.rawValue]
    }
}

extension QueueEntry {
    /// An entry from a row of ``EntryColumn``, of the database at `path`.
    ///
    /// - Throws: ``QueueError/corruptDatabase(path:reason:)`` naming the row for a state or a
    ///   dead reason this version does not know: never read as something else.
    init(row: Row, path: String) throws(QueueError) {
        let id: EntryID = row[.id]
        let stateText: String = row[.state]
        let lastError: String? = row[.lastError]
        let state: EntryState
        let deadReason: EntryLifecycle.DeadReason?
        do throws(UnknownStoredValue) {
            state = try UnknownStoredValue.state(stateText, id: id)
            deadReason = try UnknownStoredValue.deadReason(row[.deadReason], id: id)
        } catch {
            throw error.corruptDatabase(path)
        }
        let date = { (seconds: Double?) in seconds.map(Date.init(timeIntervalSince1970:)) }
        self.init(
            id: id,
            idempotencyKey: row[.idempotencyKey],
            method: row[.method],
            url: row[.url],
            headers: LineCoding.decodeHeaders(row[.headers]),
            body: StoredBody(inline: row[.body], file: row[.bodyFile], length: row[.bodyLength]),
            scopes: LineCoding.decodeScopes(row[.scopes]),
            name: row[.name],
            group: row[.groupKey],
            priority: row[.priority],
            timeout: (row[.timeoutMs] as Int64?).map { .milliseconds($0) },
            state: state,
            attempts: row[.attempts],
            createdAt: Date(timeIntervalSince1970: row[.createdAt]),
            budgetStartedAt: Date(timeIntervalSince1970: row[.budgetFrom]),
            nextAttemptAt: Date(timeIntervalSince1970: row[.nextAttemptAt]),
            lastAttemptAt: date(row[.lastAttemptAt]),
            finishedAt: date(row[.finishedAt]),
            waitingForNetwork: row[.waitingNetwork],
            leaseOwner: row[.leaseOwner],
            leaseExpiresAt: date(row[.leaseExpiresAt]),
            lastStatus: row[.lastStatus],
            lastError: lastError,
            responseExcerpt: row[.responseExcerpt],
            budgetUptime: row[.budgetUptime],
            deadReason: deadReason ?? Self.legacyDeadReason(state: state, lastError: lastError),
            // Read only for a pending row: a claim's rows (in flight) skip the text.
            nextDue: state == .pending ? (row[.clockBoot] as String?).map { DueTime(boot: $0, uptime: row[.dueUptime]) } : nil
        )
        if let key: String = row[.sealKey] { seal = StoredSeal(keyID: key, blob: row[.seal] ?? Data()) }
        traceContext = TraceContext(stored: row[.traceparent], tracestate: row[.tracestate])
        if let keep: String = row[.keepResponse] { keepResponse = ResponseKeeping(stored: keep) }
        if let sources: String = row[.responseSources] { (responseSources, bodyTakesValues) = ResponseReference.sources(stored: sources) }
        coalescingKey = row[.coalesceKey]
        if let delivery: String = row[.delivery] { self.delivery = EntryDelivery(stored: delivery) }
    }

    /// The reason a dead row of schema 3 or older, read without migrating it, kept as the
    /// prefix of its last error (`expired: older than …`).
    private static func legacyDeadReason(state: EntryState, lastError: String?) -> EntryLifecycle.DeadReason? {
        guard state == .dead, let lastError, let colon = lastError.range(of: ": ") else { return nil }
        return EntryLifecycle.DeadReason(rawValue: String(lastError[..<colon.lowerBound]))
    }
}
