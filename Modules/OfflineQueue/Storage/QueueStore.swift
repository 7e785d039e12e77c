import Foundation
import GRDB
import HTTPCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How hard a commit works to survive a crash. See `Docs/OfflineQueue.md`.
public enum QueueDurability: String, Sendable, Hashable {
    /// `synchronous=FULL`: every commit reaches the disk before the call returns; an enqueued
    /// request survives a power cut. The default.
    case full
    /// `synchronous=NORMAL`: commits survive a crash or `kill -9` of the process, but the last
    /// ones may be lost if the machine loses power. Several times faster to enqueue.
    case normal
}

/// The SQLite file: every read and write of the queue's rows, each write in one
/// `BEGIN IMMEDIATE` transaction so several processes can share the file.
final class QueueStore: Sendable {
    let path: String
    let bodies: BodyStore
    private let pool: DatabasePool

    /// Opens (and, when `create` is set, creates) the database at `path`.
    ///
    /// A missing file is created with mode 0600. A file that is not a queue database, or was
    /// written by a newer schema, is refused before anything is written to it.
    init(path: String, create: Bool, durability: QueueDurability) throws(QueueError) {
        self.path = path
        self.bodies = BodyStore(databasePath: path)
        if !FileManager.default.fileExists(atPath: path) {
            guard create else { throw .databaseMissing(path: path) }
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd < 0 && errno != EEXIST { throw BodyStore.error(errno, path: path) }
            if fd >= 0 { close(fd) }
        }
        try Self.inspect(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.label = "courier.queue"
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // GRDB sets NORMAL when it turns WAL on, after `prepareDatabase`: set it again on
            // the writer, the only connection that commits.
            try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        } catch {
            throw Self.map(error, path: path, opening: true)
        }
        try checkSchemaAndMigrate()
    }

    /// Reads an existing file through a read-only connection, which cannot change it (not
    /// even its journal mode), and refuses it when it is damaged, foreign or newer.
    private static func inspect(_ path: String) throws(QueueError) {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard size > 0 else { return }
        do {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(30)
            let (version, foreignTables) = try DatabaseQueue(path: path, configuration: configuration).read { db -> (Int, [String]) in
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                let tables = try String.fetchAll(db, sql: """
                    SELECT name FROM sqlite_master WHERE type = 'table'
                    AND name NOT LIKE 'sqlite_%' AND name NOT IN ('entry', 'grdb_migrations')
                    """)
                return (version, tables)
            }
            if version > Schema.version {
                throw QueueError.newerSchema(path: path, found: version, supported: Schema.version)
            }
            if version == 0 && !foreignTables.isEmpty {
                throw QueueError.corruptDatabase(path: path, reason: "a SQLite database of another application (tables: \(foreignTables.prefix(3).joined(separator: ", ")))")
            }
        } catch {
            throw map(error, path: path, opening: true)
        }
    }

    private func checkSchemaAndMigrate() throws(QueueError) {
        let path = self.path
        do {
            let version = try pool.read { try Int.fetchOne($0, sql: "PRAGMA user_version") ?? 0 }
            if version > Schema.version {
                throw QueueError.newerSchema(path: path, found: version, supported: Schema.version)
            }
            let migrator = Schema.migrator
            if try pool.read({ try migrator.hasBeenSuperseded($0) }) {
                throw QueueError.newerSchema(path: path, found: version, supported: Schema.version)
            }
            if version < Schema.version { try migrator.migrate(pool) }
        } catch {
            throw Self.map(error, path: path, opening: true)
        }
    }

    // MARK: - Writing

    /// Inserts `entries` in one transaction. An entry whose caller-given key is already
    /// stored is not inserted again; its ticket points at the stored entry.
    func insert(_ entries: [NewEntry], now: Date) async throws(QueueError) -> [Ticket] {
        try await write { db in
            var tickets: [Ticket] = []
            tickets.reserveCapacity(entries.count)
            let insert = try db.cachedStatement(sql: """
                INSERT INTO entry (idempotency_key, method, url, headers, body, body_file, body_length, scopes, name,
                    group_key, priority, timeout_ms, state, attempts, created_at, budget_from, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)
                ON CONFLICT (idempotency_key) DO NOTHING
                """)
            for entry in entries {
                var inline: Data?
                var file: String?
                switch entry.body {
                case .inline(let data): inline = data
                case .file(let name, _): file = name
                case nil: break
                }
                let timeout = entry.timeout.map { Int64($0.seconds * 1000) }
                let due = max(now, entry.notBefore ?? now).timeIntervalSince1970
                try insert.execute(arguments: [
                    entry.idempotencyKey, entry.method, entry.url, LineCoding.encode(entry.headers), inline, file,
                    entry.body?.length, LineCoding.encode(entry.scopes), entry.name, entry.group, entry.priority, timeout,
                    now.timeIntervalSince1970, now.timeIntervalSince1970, due,
                ])
                if db.changesCount == 1 {
                    tickets.append(Ticket(id: db.lastInsertedRowID, idempotencyKey: entry.idempotencyKey, deduplicated: false))
                } else {
                    let id = try EntryID.fetchOne(db, sql: "SELECT id FROM entry WHERE idempotency_key = ?", arguments: [entry.idempotencyKey]) ?? 0
                    tickets.append(Ticket(id: id, idempotencyKey: entry.idempotencyKey, deduplicated: true))
                }
            }
            return tickets
        }
    }

    /// In one transaction: returns lapsed leases to pending, then claims up to `limit` due
    /// entries for `owner` until `leaseUntil`: the highest priority first, then the oldest, and
    /// only the first open entry of each group.
    ///
    /// - Parameter attemptedBefore: when set, skips entries attempted at or after it (for a
    ///   drain that tries each entry once).
    func claim(limit: Int, owner: String, now: Date, leaseUntil: Date, attemptedBefore: Date?) async throws(QueueError) -> [QueueEntry] {
        guard limit > 0 else { return [] }
        return try await write { db in
            try Self.claim(db, limit: limit, owner: owner, now: now, leaseUntil: leaseUntil, attemptedBefore: attemptedBefore)
        }
    }

    /// Records `settlements` and claims up to `claimLimit` entries, in one transaction: the
    /// drain loop's single commit per turn.
    func settleAndClaim(
        _ settlements: [Settlement], owner: String, now: Date,
        claimLimit: Int, leaseUntil: Date, attemptedBefore: Date?
    ) async throws(QueueError) -> (lost: Set<EntryID>, claimed: [QueueEntry]) {
        guard !settlements.isEmpty || claimLimit > 0 else { return ([], []) }
        return try await write { db in
            let lost = try Self.settle(db, settlements, owner: owner, now: now)
            let claimed = claimLimit > 0
                ? try Self.claim(db, limit: claimLimit, owner: owner, now: now, leaseUntil: leaseUntil, attemptedBefore: attemptedBefore)
                : []
            return (lost, claimed)
        }
    }

    private static func claim(_ db: Database, limit: Int, owner: String, now: Date, leaseUntil: Date, attemptedBefore: Date?) throws -> [QueueEntry] {
        try db.cachedStatement(sql: """
            UPDATE entry SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL
            WHERE state = 'inflight' AND lease_expires_at < ?
            """).execute(arguments: [now.timeIntervalSince1970])
        // One statement picks and marks the entries; RETURNING gives them back in no
        // particular order, so they are sorted again below.
        let onceClause = attemptedBefore == nil ? "" : "AND (e.last_attempt_at IS NULL OR e.last_attempt_at < :cutoff)"
        let statement = try db.cachedStatement(sql: """
            UPDATE entry SET state = 'inflight', lease_owner = :owner, lease_expires_at = :until, last_attempt_at = :now
            WHERE id IN (
                SELECT e.id FROM entry AS e INDEXED BY entry_pending
                WHERE e.state = 'pending' AND e.next_attempt_at <= :now \(onceClause)
                AND (e.group_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM entry AS p INDEXED BY entry_group_open
                    WHERE p.group_key = e.group_key AND p.id < e.id AND p.state IN ('pending', 'inflight')))
                ORDER BY e.priority DESC, e.id
                LIMIT :limit)
            RETURNING \(Schema.entryColumns)
            """)
        var arguments: StatementArguments = [
            "owner": owner, "until": leaseUntil.timeIntervalSince1970, "now": now.timeIntervalSince1970, "limit": limit,
        ]
        if let attemptedBefore { _ = arguments.append(contentsOf: ["cutoff": attemptedBefore.timeIntervalSince1970]) }
        return try Row.fetchAll(statement, arguments: arguments)
            .map(QueueEntry.init(row:))
            .sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }
    }

    /// One finished attempt, to record.
    struct Settlement: Sendable {
        var id: EntryID
        var transition: Transition
    }

    /// Applies `settlements` of `owner`'s claims in one transaction. A settlement whose lease
    /// `owner` no longer holds (it lapsed and another drainer claimed the entry) changes
    /// nothing; the ids of those are returned.
    @discardableResult
    func settle(_ settlements: [Settlement], owner: String, now: Date) async throws(QueueError) -> Set<EntryID> {
        guard !settlements.isEmpty else { return [] }
        return try await write { db in try Self.settle(db, settlements, owner: owner, now: now) }
    }

    private static func settle(_ db: Database, _ settlements: [Settlement], owner: String, now: Date) throws -> Set<EntryID> {
        var lost: Set<EntryID> = []
        let stamp = now.timeIntervalSince1970
        // Deliveries, the common case, in one statement per status.
        var deliveries: [Int: [EntryID]] = [:]
        var others: [Settlement] = []
        for settlement in settlements {
            if case .deliver(let status) = settlement.transition {
                deliveries[status, default: []].append(settlement.id)
            } else {
                others.append(settlement)
            }
        }
        let deliver = try db.cachedStatement(sql: """
            UPDATE entry SET state = 'delivered', attempts = attempts + 1, finished_at = :now, last_status = :status,
                last_error = NULL, waiting_network = 0, lease_owner = NULL, lease_expires_at = NULL
            WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'inflight' AND lease_owner = :owner
            RETURNING id
            """)
        for (status, ids) in deliveries {
            let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
            let recorded = Set(try EntryID.fetchAll(deliver, arguments: ["now": stamp, "status": status, "ids": list, "owner": owner]))
            lost.formUnion(ids.filter { !recorded.contains($0) })
        }
        for settlement in others {
            let arguments: StatementArguments
            let sql: String
            switch settlement.transition {
            case .deliver:
                continue   // recorded above
            case .retry(let at, let consumes, let waiting, let status, let error, let excerpt):
                sql = """
                    UPDATE entry SET state = 'pending', attempts = attempts + ?, next_attempt_at = ?, waiting_network = ?,
                        last_status = ?, last_error = ?, response_excerpt = ?, lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                arguments = [consumes ? 1 : 0, at.timeIntervalSince1970, waiting, status, error, excerpt, settlement.id, owner]
            case .deadLetter(let reason, let status, let error, let excerpt):
                sql = """
                    UPDATE entry SET state = 'dead', attempts = attempts + ?, finished_at = ?, last_status = ?,
                        last_error = ?, response_excerpt = ?, waiting_network = 0, lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                let counted = reason == .expired && status == nil ? 0 : 1
                arguments = [counted, stamp, status, "\(reason.rawValue): \(error)", excerpt, settlement.id, owner]
            case .release:
                sql = """
                    UPDATE entry SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL
                    WHERE id = ? AND state = 'inflight' AND lease_owner = ?
                    """
                arguments = [settlement.id, owner]
            }
            try db.cachedStatement(sql: sql).execute(arguments: arguments)
            if db.changesCount == 0 { lost.insert(settlement.id) }
        }
        return lost
    }

    /// Entries waiting only for the network become due at `now`. Returns how many.
    @discardableResult
    func wakeNetworkWaiters(now: Date) async throws(QueueError) -> Int {
        try await write { db in
            try db.execute(sql: """
                UPDATE entry INDEXED BY entry_network_wait SET next_attempt_at = ?, waiting_network = 0
                WHERE state = 'pending' AND waiting_network = 1
                """, arguments: [now.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// Dead or pending entries become due now with a fresh budget. `nil` ids means every
    /// dead entry. Returns the ids changed.
    func retry(ids: [EntryID]?, now: Date) async throws(QueueError) -> [EntryID] {
        try await write { db in
            let stamp = now.timeIntervalSince1970
            let set = """
                SET state = 'pending', attempts = 0, budget_from = :now, next_attempt_at = :now, waiting_network = 0,
                    finished_at = NULL
                """
            guard let ids else {
                let changed = try EntryID.fetchAll(db, sql: "SELECT id FROM entry WHERE state = 'dead' ORDER BY id")
                try db.execute(sql: "UPDATE entry \(set) WHERE state = 'dead'", arguments: ["now": stamp])
                return changed
            }
            for id in ids {
                guard let state = try String.fetchOne(db, sql: "SELECT state FROM entry WHERE id = ?", arguments: [id]) else {
                    throw QueueError.noSuchEntry(id)
                }
                if state == EntryState.inflight.rawValue { throw QueueError.entryInFlight(id) }
                if state == EntryState.delivered.rawValue { continue }
                try db.execute(sql: "UPDATE entry \(set) WHERE id = :id", arguments: ["now": stamp, "id": id])
            }
            return ids
        }
    }

    /// Deletes the selected entries and then their body files. Returns how many rows went.
    func purge(_ selection: PurgeSelection, now: Date) async throws(QueueError) -> Int {
        let (count, files) = try await write { db -> (Int, [String]) in
            var files: [String] = []
            var count = 0
            switch selection {
            case .states(let states, let before):
                let chosen = states.subtracting([.inflight]).map(\.rawValue)
                guard !chosen.isEmpty else { return (0, []) }
                let placeholders = databaseQuestionMarks(count: chosen.count)
                var arguments = StatementArguments(chosen)
                var timeClause = ""
                if let before {
                    timeClause = "AND COALESCE(finished_at, created_at) < ?"
                    _ = arguments.append(contentsOf: [before.timeIntervalSince1970])
                }
                let filter = "state IN (\(placeholders)) \(timeClause)"
                files = try String.fetchAll(db, sql: "SELECT body_file FROM entry WHERE \(filter) AND body_file IS NOT NULL", arguments: arguments)
                try db.execute(sql: "DELETE FROM entry WHERE \(filter)", arguments: arguments)
                count = db.changesCount
            case .ids(let ids):
                for id in ids {
                    guard let row = try Row.fetchOne(db, sql: "SELECT state, lease_expires_at, body_file FROM entry WHERE id = ?", arguments: [id]) else {
                        throw QueueError.noSuchEntry(id)
                    }
                    let state: String = row[0]
                    let lease: Double? = row[1]
                    if state == EntryState.inflight.rawValue, let lease, lease >= now.timeIntervalSince1970 {
                        throw QueueError.entryInFlight(id)
                    }
                    if let file: String = row[2] { files.append(file) }
                    try db.execute(sql: "DELETE FROM entry WHERE id = ?", arguments: [id])
                    count += 1
                }
            }
            return (count, files)
        }
        bodies.remove(files)
        return count
    }

    // MARK: - Reading

    func entry(_ id: EntryID) async throws(QueueError) -> QueueEntry? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(Schema.entryColumns) FROM entry WHERE id = ?", arguments: [id]).map(QueueEntry.init(row:))
        }
    }

    func entry(idempotencyKey key: String) async throws(QueueError) -> QueueEntry? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT \(Schema.entryColumns) FROM entry WHERE idempotency_key = ?", arguments: [key]).map(QueueEntry.init(row:))
        }
    }

    func entries(_ filter: EntryFilter) async throws(QueueError) -> [QueueEntry] {
        try await read { db in
            var clauses: [String] = []
            var arguments = StatementArguments()
            if !filter.states.isEmpty, filter.states.count < EntryState.allCases.count {
                let states = filter.states.map(\.rawValue).sorted()
                clauses.append("state IN (\(databaseQuestionMarks(count: states.count)))")
                _ = arguments.append(contentsOf: StatementArguments(states))
            }
            if let group = filter.group {
                clauses.append("group_key = ?")
                _ = arguments.append(contentsOf: [group])
            }
            if let after = filter.after {
                clauses.append("id > ?")
                _ = arguments.append(contentsOf: [after])
            }
            let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            _ = arguments.append(contentsOf: [max(0, filter.limit)])
            return try Row.fetchAll(db, sql: "SELECT \(Schema.entryColumns) FROM entry \(whereClause) ORDER BY id LIMIT ?", arguments: arguments)
                .map(QueueEntry.init(row:))
        }
    }

    func counts() async throws(QueueError) -> QueueCounts {
        try await read { db in
            var counts = QueueCounts()
            for row in try Row.fetchAll(db, sql: "SELECT state, count(*) FROM entry INDEXED BY entry_state GROUP BY state") {
                let state: String = row[0]
                let count: Int = row[1]
                switch EntryState(rawValue: state) {
                case .pending: counts.pending = count
                case .inflight: counts.inflight = count
                case .delivered: counts.delivered = count
                case .dead: counts.dead = count
                case nil: break
                }
            }
            counts.oldestPendingCreatedAt = try Double.fetchOne(db, sql: """
                SELECT created_at FROM entry INDEXED BY entry_state WHERE state = 'pending' ORDER BY id LIMIT 1
                """).map(Date.init(timeIntervalSince1970:))
            counts.nextAttemptAt = try Double.fetchOne(db, sql: """
                SELECT min(next_attempt_at) FROM entry INDEXED BY entry_due WHERE state = 'pending'
                """).map(Date.init(timeIntervalSince1970:))
            return counts
        }
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

    // MARK: - Plumbing

    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(QueueError) -> T {
        do {
            return try await pool.writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        } catch {
            throw Self.map(error, path: path, opening: false)
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(QueueError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Self.map(error, path: path, opening: false)
        }
    }

    /// Whether the file system holding `path` has no block left for us.
    static func isFull(_ path: String) -> Bool {
        var info = statvfs()
        let folder = (path as NSString).deletingLastPathComponent
        guard statvfs(folder.isEmpty ? "." : folder, &info) == 0 else { return false }
        return info.f_bavail == 0
    }

    /// A GRDB or SQLite error in the queue's terms.
    static func map(_ error: any Error, path: String, opening: Bool) -> QueueError {
        if let error = error as? QueueError { return error }
        guard let error = error as? DatabaseError else { return .io(path: path, reason: "\(error)") }
        let message = error.message ?? "\(error.resultCode)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT: return .corruptDatabase(path: path, reason: message)
        case .SQLITE_FULL: return .diskFull(path: path)
        case .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM: return .cannotCreate(path: path, reason: message)
        case .SQLITE_IOERR:
            // SQLite reports a full disk while it grows the -shm or -wal file as a plain I/O error.
            if isFull(path) { return .diskFull(path: path) }
            return opening ? .cannotCreate(path: path, reason: message) : .io(path: path, reason: message)
        default: return .io(path: path, reason: message)
        }
    }
}
