import Foundation
import GRDB
import HTTPCore

/// Inserting, changing and reading entries: what enqueue, `sync` and the lookups use.
extension SQLiteQueueStore {
    /// Inserts `entries` in one transaction. An entry whose caller-given key is already
    /// stored is not inserted again; its ticket points at the stored entry.
    ///
    /// Concurrent callers share a transaction, and so its `fsync` (see ``CommitGroup``); each
    /// returns once its rows are committed.
    func insert(_ entries: [NewEntry], now: QueueTime) async throws(QueueError) -> [Ticket] {
        if readOnly { throw Self.readOnlyRefusal(path) }
        let tickets = try await commits.insert(entries, now: now)
        if tickets.contains(where: { !$0.deduplicated }) { ringWake() }
        return tickets
    }

    /// Inserts `entries` inside the caller's transaction.
    static func insert(_ db: Database, _ entries: [NewEntry], now: QueueTime) throws -> [Ticket] {
        var tickets: [Ticket] = []
        tickets.reserveCapacity(entries.count)
        try markBoot(db, now.boot)
        let insert = try db.cachedStatement(sql: insertSQL)
        for entry in entries {
            // An edit that coalesces takes the place of the one waiting under its key, or
            // waits behind the one in flight.
            var behind: EntryID?
            if let key = entry.coalescingKey {
                switch try coalesce(db, entry, key: key, now: now) {
                case .done(let ticket):
                    tickets.append(ticket)
                    continue
                case .insert(let predecessor):
                    behind = predecessor
                }
            }
            let (inline, file) = entry.body.columns
            let timeout = entry.timeout.map(\.saturatingMilliseconds)
            let wall = now.wall.timeIntervalSince1970
            let wait = max(0, (entry.notBefore?.timeIntervalSince1970 ?? wall) - wall)
            let arguments: StatementArguments = [
                entry.idempotencyKey, entry.method, entry.url, LineCoding.encode(entry.headers), inline, file,
                entry.body?.length, LineCoding.encode(entry.scopes), entry.name, entry.group, entry.priority, timeout,
                wall, wall, wall + wait, now.boot, now.uptime, now.uptime + wait, entry.seal?.keyID, entry.seal?.blob,
            ]
            if entry.keepResponse != nil || !entry.references.isEmpty || entry.coalescingKey != nil || entry.delivery != nil {
                let trace = entry.traceContext
                try db.cachedStatement(sql: keepingInsertSQL).execute(
                    arguments: arguments + [
                        trace?.traceparent, trace?.tracestate, entry.keepResponse?.stored, entry.storedResponseSources, entry.coalescingKey,
                        entry.delivery?.stored,
                    ]
                )
            } else if let trace = entry.traceContext {
                try db.cachedStatement(sql: tracedInsertSQL).execute(arguments: arguments + [trace.traceparent, trace.tracestate])
            } else {
                try insert.execute(arguments: arguments)
            }
            if db.changesCount == 1 {
                let id = db.lastInsertedRowID
                if !entry.after.isEmpty { try link(db, child: id, entry, now: now) }
                if let behind { try waitBehind(db, child: id, predecessor: behind, now: now) }
                tickets.append(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: false))
            } else {
                let id = try EntryID.fetchOne(db, sql: "SELECT id FROM entry WHERE idempotency_key = ?", arguments: [entry.idempotencyKey]) ?? 0
                tickets.append(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: true))
            }
        }
        return tickets
    }

    /// The insert of one entry: one more than the largest id there is or was (schema 8 has no
    /// AUTOINCREMENT, whose sequence row would cost a page write per insert). An entry without
    /// a trace context binds no trace columns: two more arguments cost an enqueue fifteen
    /// allocations (measured), which most entries need not pay.
    /// An entry that keeps its response, takes values from its parents', coalesces or has a
    /// policy of its own (few), binds every column (`NULL` where it has none).
    private static let insertSQL = insertSQL(traced: false)
    private static let tracedInsertSQL = insertSQL(traced: true)
    private static let keepingInsertSQL = insertSQL(traced: true, keeping: true)

    private static func insertSQL(traced: Bool, keeping: Bool = false) -> String {
        """
        INSERT INTO entry (id, idempotency_key, method, url, headers, body, body_file, body_length, scopes, name,
            group_key, priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at,
            clock_boot, budget_uptime, due_uptime, seal_key, seal\(traced ? ", traceparent, tracestate" : "")\(keeping ? ", keep_response, response_sources, coalesce_key, delivery" : ""))
        VALUES (
            max((SELECT COALESCE(max(id), 0) FROM entry), (SELECT id_floor FROM queue_meta)) + 1,
            ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?, ?, ?, ?\(traced ? ", ?, ?" : "")\(keeping ? ", ?, ?, ?, ?" : ""))
        ON CONFLICT (idempotency_key) DO NOTHING
        """
    }

    /// Records that a row of `boot` is written: when the open rows were all on another boot,
    /// they no longer are (`queue_meta.clock_boot` cleared, so the next drain carries over).
    /// Writes nothing when they were on `boot`, the common case.
    static func markBoot(_ db: Database, _ boot: String) throws {
        try db.cachedStatement(sql: "UPDATE queue_meta SET clock_boot = NULL WHERE clock_boot <> ?").execute(arguments: [boot])
    }

    // MARK: - Reading

    /// The operator's one read (``QueueOperatorStorage/entries(_:now:)``): a page when the
    /// query bounds its scan, else every match up to its limit.
    func entries(_ query: EntryQuery, now: QueueTime) async throws(QueueError) -> EntryPage {
        // A file from before sealing (read only: one opened to write is migrated) has no seal column.
        if schemaVersion < Schema.firstSealVersion, query.conditions.contains(where: { if case .seal = $0 { true } else { false } }) {
            return EntryPage()
        }
        if let scanLimit = query.scanLimit { return try await page(query, scanLimit: scanLimit, now: now) }
        let found = try await list(query, now: now)
        return EntryPage(entries: found, next: query.limit > 0 && found.count == query.limit ? found.last?.id : nil)
    }

    private func list(_ filter: EntryQuery, now: QueueTime) async throws(QueueError) -> [QueueEntry] {
        try await read { db in
            let (states, stateArguments) = self.stateClauses(filter.states)
            let (others, otherArguments) = Self.clauses(filter.conditions, now: now)
            var clauses = states + others
            var arguments = stateArguments + otherArguments
            if let after = filter.after {
                clauses.append("id > ?")
                _ = arguments.append(contentsOf: [after])
            }
            let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            _ = arguments.append(contentsOf: [max(0, filter.limit)])
            return try Row.fetchAll(db, sql: "SELECT \(self.entryColumns) FROM \(self.entrySource) \(whereClause) ORDER BY id LIMIT ?", arguments: arguments)
                .map { row in try QueueEntry(row: row, path: self.path) }
        }
    }

    /// The entries of `filter` among the first `scanLimit` rows of its states past its
    /// cursor: the rows are walked by id through the state's index (or the table's), and the
    /// group, name and origin are matched on those rows only.
    private func page(_ filter: EntryQuery, scanLimit: Int, now: QueueTime) async throws(QueueError) -> EntryPage {
        try await read { db in
            let (states, stateArguments) = self.stateClauses(filter.states)
            var window = states
            var windowArguments = stateArguments
            if !filter.states.isEmpty, filter.states.isSubset(of: [.pending, .inflight]), self.schemaVersion >= Schema.firstLeaseVersion {
                // Open entries are stored as pending rows, usually the newest: the walk in id
                // order starts at the first of them (found in the claim order's index) rather
                // than at the cursor, through every finished row before it.
                guard let first = try Self.firstPending(db, after: filter.after) else { return EntryPage(entries: [], next: nil) }
                window.append("id >= ?")
                _ = windowArguments.append(contentsOf: [first])
            } else if let after = filter.after {
                window.append("id > ?")
                _ = windowArguments.append(contentsOf: [after])
            }
            let windowWhere = window.isEmpty ? "" : "WHERE " + window.joined(separator: " AND ")
            let scan = max(scanLimit, filter.limit, 1)
            // The last row of the window, when the window is full: where a short page's next one starts.
            let windowEnd = try EntryID.fetchOne(db, sql: "SELECT id FROM \(self.entrySource) \(windowWhere) ORDER BY id LIMIT 1 OFFSET ?",
                                                 arguments: windowArguments + [scan - 1])
            let (others, otherArguments) = Self.clauses(filter.conditions, now: now)
            var clauses = window + others
            var arguments = windowArguments + otherArguments
            if let windowEnd {
                clauses.append("id <= ?")
                _ = arguments.append(contentsOf: [windowEnd])
            }
            _ = arguments.append(contentsOf: [max(0, filter.limit)])
            let found = try Row.fetchAll(db, sql: """
                SELECT \(self.entryColumns) FROM \(self.entrySource) WHERE \(clauses.isEmpty ? "1" : clauses.joined(separator: " AND ")) ORDER BY id LIMIT ?
                """, arguments: arguments).map { row in try QueueEntry(row: row, path: self.path) }
            if filter.limit > 0, found.count == filter.limit, let last = found.last {
                let more = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(self.entrySource) WHERE \((states + ["id > ?"]).joined(separator: " AND ")))",
                                             arguments: stateArguments + [last.id]) ?? false
                return EntryPage(entries: found, next: more ? last.id : nil)
            }
            return EntryPage(entries: found, next: windowEnd)
        }
    }

    /// The first pending row (a lease or none) past `after`: one seek per priority there is in
    /// the claim order's index, ordered by priority first.
    static func firstPending(_ db: Database, after: EntryID?) throws -> EntryID? {
        var first: EntryID?
        var below: Int?
        while let priority = try Int.fetchOne(db.cachedStatement(sql: below == nil
            ? "SELECT priority FROM entry INDEXED BY entry_pending WHERE state = 'pending' ORDER BY priority DESC LIMIT 1"
            : "SELECT priority FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND priority < ? ORDER BY priority DESC LIMIT 1"),
            arguments: below.map { [$0] } ?? []) {
            if let id = try EntryID.fetchOne(db.cachedStatement(sql: """
                SELECT id FROM entry INDEXED BY entry_pending WHERE state = 'pending' AND priority = ? AND id > ? ORDER BY priority DESC, id LIMIT 1
                """), arguments: [priority, after ?? 0]) {
                first = min(first ?? id, id)
            }
            below = priority
        }
        return first
    }

    /// The conditions on ``entrySource`` for `states` (none for every state) and their arguments.
    func stateClauses(_ states: Set<EntryState>) -> ([String], StatementArguments) {
        guard !states.isEmpty, states.count < EntryState.allCases.count else { return ([], StatementArguments()) }
        let (condition, arguments) = stateCondition(states)
        var clauses = [condition]
        if states == [.inflight], schemaVersion >= Schema.firstLeaseVersion {
            // Driven by the few leases, not by walking every pending row for the leased ones.
            clauses.append("id IN (SELECT entry_id FROM lease)")
        }
        return (clauses, arguments)
    }

    /// The conditions on ``entrySource`` (aliased `alias`) for a filter's group, name and origin.
    /// `conditions` in SQLite's SQL, on rows aliased `alias`; an age is measured from `now`'s
    /// wall clock, as the stored times were written.
    static func clauses(_ conditions: [EntryCondition], alias: String? = nil, now: QueueTime) -> ([String], StatementArguments) {
        let column = { (name: String) in alias.map { "\($0).\(name)" } ?? name }
        var clauses: [String] = []
        var arguments = StatementArguments()
        func add(_ clause: String, _ values: [any DatabaseValueConvertible]) {
            clauses.append(clause)
            _ = arguments.append(contentsOf: StatementArguments(values))
        }
        for condition in conditions {
            switch condition {
            case .group(let group): add("\(column("group_key")) = ?", [group])
            case .name(let name): add("\(column("name")) = ?", [name])
            case .origin(let origin):
                // ``EntryFilter/matches(origin:url:)``: the origin, then nothing, a path or a query.
                let url = column("url")
                add("(\(url) = ? OR substr(\(url), 1, length(?) + 1) IN (? || '/', ? || '?'))", [origin, origin, origin, origin])
            case .lastStatus(let range): add("\(column("last_status")) BETWEEN ? AND ?", [range.lowerBound, range.upperBound])
            case .olderThan(let age):
                add("COALESCE(\(column("finished_at")), \(column("created_at"))) <= ?", [now.wall.timeIntervalSince1970 - age.seconds])
            case .urlPrefix(let prefix): add("substr(\(column("url")), 1, length(?)) = ?", [prefix, prefix])
            case .idAbove(let id): add("\(column("id")) > ?", [id])
            case .idAtMost(let id): add("\(column("id")) <= ?", [id])
            case .ids(let ids) where ids.count == 1: add("\(column("id")) = ?", [ids[0]])
            case .ids(let ids): add("\(column("id")) IN (SELECT value FROM json_each(?))", [list(ids)])
            case .idempotencyKey(let key): add("\(column("idempotency_key")) = ?", [key])
            case .finishedBefore(let cutoff):
                add("COALESCE(\(column("finished_at")), \(column("created_at"))) < ?", [cutoff.timeIntervalSince1970])
            case .seal(.clear): add("\(column("seal_key")) IS NULL", [])
            case .seal(.notUnder(let key)): add("\(column("seal_key")) IS NOT NULL AND \(column("seal_key")) <> ?", [key])
            }
        }
        return (clauses, arguments)
    }

    /// Body file names that rows still point at.
    func referencedBodyFiles() async throws(QueueError) -> Set<String> {
        try await read { db in
            Set(try String.fetchAll(db, sql: "SELECT body_file FROM entry WHERE body_file IS NOT NULL"))
        }
    }

    /// `PRAGMA integrity_check`'s answer: `["ok"]` for a sound file.
    func integrityCheck() async throws(QueueError) -> [String] {
        try await read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }

    /// One upsert per minute and one delete of the old minutes, in one transaction.
    func recordActivity(_ minutes: [ActivityMinute], keepingSince: Date) async throws(QueueError) {
        guard !readOnly, schemaVersion >= Schema.firstActivityVersion, !minutes.isEmpty else { return }
        try await write { db in
            for minute in minutes {
                try db.execute(sql: """
                    INSERT INTO activity_minute (minute, delivered, failed, pending, due) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (minute) DO UPDATE SET delivered = delivered + excluded.delivered, failed = failed + excluded.failed,
                        pending = COALESCE(excluded.pending, pending), due = COALESCE(excluded.due, due)
                    """, arguments: [minute.number, minute.delivered, minute.failed, minute.pending, minute.due])
            }
            try db.execute(sql: "DELETE FROM activity_minute WHERE minute < ?", arguments: [ActivityMinute.number(of: keepingSince)])
        }
    }

    /// A range of the table's key: at most the minutes kept (two hours).
    func activity(since: Date) async throws(QueueError) -> [ActivityMinute] {
        guard schemaVersion >= Schema.firstActivityVersion else { return [] }
        return try await read { db in
            try Row.fetchAll(db, sql: "SELECT minute, delivered, failed, pending, due FROM activity_minute WHERE minute >= ? ORDER BY minute",
                             arguments: [ActivityMinute.number(of: since)]).map { row in
                ActivityMinute(minute: ActivityMinute.start(of: row[0]), delivered: row[1], failed: row[2], pending: row[3], due: row[4])
            }
        }
    }
}
