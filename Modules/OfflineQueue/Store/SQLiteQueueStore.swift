import Foundation
import GRDB
import HTTPCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SQLite store (``QueueStorage``), the default: every read and write of the queue's rows
/// in one file, each write in one `BEGIN IMMEDIATE` transaction so several processes can share
/// the file; large bodies in files beside it.
final class SQLiteQueueStore: QueueStoreParts {
    let path: String
    let bodies: BodyStore
    /// This drainer's hold on its claims, which dies with the process.
    let ownerLock: OwnerLock
    /// Whether the file was opened read-only: every write is refused before SQLite sees it.
    let readOnly: Bool
    /// The space a drain gives back to record what it sent when the disk is full.
    let reserve: DiskReserve

    /// A `DatabasePool` when writing; one read-only `DatabaseQueue` when reading only, since a
    /// pool would set up WAL, which a reader without write access cannot do.
    let pool: any DatabaseWriter
    /// The columns read into a ``QueueEntry`` (``EntryColumn``): for an older file opened
    /// read-only (which cannot migrate), what it lacks is read as `NULL`.
    let entryColumns: String
    /// The file's schema version: ``Schema/version`` once migrated; an older file opened
    /// read-only keeps its own (it lacks what later migrations add, such as pauses).
    let schemaVersion: Int
    /// Where entries are read as the engine sees them (in flight or not): `entry_view`, or for
    /// an older file opened read-only, whose claims are still columns of `entry`, `entry`.
    var entrySource: String { schemaVersion >= Schema.firstLeaseVersion ? "entry_view" : "entry" }

    /// A condition on `states` for rows of ``entrySource`` (aliased `alias`), and its arguments.
    /// Of schema 6 on, `state` is computed (in flight is a pending row with a lease): the
    /// condition also names the stored state, `row_state`, so the `(state, id)` index of finished
    /// rows serves it (pending rows are walked in id order).
    func stateCondition(_ states: Set<EntryState>, alias: String? = nil) -> (String, StatementArguments) {
        let prefix = alias.map { $0 + "." } ?? ""
        let names = states.map(\.rawValue).sorted()
        var condition = "\(prefix)state IN (\(databaseQuestionMarks(count: names.count)))"
        var arguments = StatementArguments(names)
        if schemaVersion >= Schema.firstLeaseVersion {
            let stored = Set(states.map { $0 == .inflight ? EntryState.pending.rawValue : $0.rawValue }).sorted()
            condition += " AND \(prefix)row_state IN (\(databaseQuestionMarks(count: stored.count)))"
            _ = arguments.append(contentsOf: StatementArguments(stored))
            // The words of the finished rows' partial index (schema 8), so the planner can use it.
            if !stored.contains(EntryState.pending.rawValue) { condition += " AND \(prefix)row_state <> 'pending'" }
        }
        return (condition, arguments)
    }
    /// Inserts from concurrent enqueuers, committed together.
    let commits: CommitGroup
    /// Checkpoints the log off the writer (`nil` for a queue opened read-only).
    let checkpointer: Checkpointer?
    /// Rung after each commit that makes entries due; watched by this process's drains.
    let wakeFile: WakeFile
    /// What a ring from any process calls, once a drain has started watching.
    let remoteWake = LockedBox<(@Sendable () -> Void)?>(nil)
    /// Rung after each commit that delivers, kills or removes entries; watched while anyone in
    /// this process awaits an outcome (``observeSettlements(_:)``).
    let settledFile: WakeFile
    let settledObservers = SettlementObservers()

    /// Opens (and, when `create` is set, creates) the database at `path`; with `readOnly`,
    /// opens an existing one for reading only.
    ///
    /// A missing file is created with mode 0600. A file that is not a queue database, or was
    /// written by a newer schema, is refused before anything is written to it, and so is a body
    /// folder that is a symbolic link or open to other users. A writer sets its reserve
    /// (``DiskReserve``) aside when there is room for it: a drain needs it, an enqueue does not.
    init(
        path: String, create: Bool, durability: QueueDurability, readOnly: Bool = false, boot: String, inlineBodyLimit: Int
    ) throws(QueueError) {
        self.path = path
        self.readOnly = readOnly
        self.reserve = DiskReserve(databasePath: path, inlineBodyLimit: inlineBodyLimit)
        self.ownerLock = OwnerLock(databasePath: path, boot: boot)
        self.bodies = BodyStore(databasePath: path, readOnly: readOnly)
        self.wakeFile = WakeFile(databasePath: path)
        self.settledFile = WakeFile(path: path + ".settled")
        let exists = FileManager.default.fileExists(atPath: path)
        if !exists && (readOnly || !create) { throw .databaseMissing(path: path) }
        try bodies.checkFolder()
        if readOnly {
            let (reader, version) = try Self.openReadOnly(path)
            pool = reader
            commits = CommitGroup(writer: reader, path: path)
            checkpointer = nil
            entryColumns = EntryColumn.selection(readingVersion: version)
            schemaVersion = version
            return
        }
        entryColumns = EntryColumn.selection(readingVersion: Schema.version)
        schemaVersion = Schema.version
        if !exists {
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd < 0 && errno != EEXIST { throw BodyStore.error(errno, path: path) }
            if fd >= 0 { close(fd) }
        }
        try Self.inspect(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.label = "courier.queue"
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        let pool: DatabasePool
        // A queue whose commits wait for the disk anyway (`.full`) keeps SQLite's own
        // checkpoints: one beside its writer would only compete with every commit's `fsync`.
        let checkpointer = durability == .normal ? Checkpointer(path: path) : nil
        do {
            pool = try Self.openPool(path, configuration: configuration)
            // GRDB sets NORMAL when it turns WAL on, after `prepareDatabase`: set it again on
            // the writer, the only connection that commits. Its log is checkpointed off it.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                checkpointer?.install(on: db)
            }
        } catch {
            throw Self.map(error, path: path, opening: true)
        }
        self.pool = pool
        self.checkpointer = checkpointer
        commits = CommitGroup(writer: pool, path: path)
        try enableIncrementalVacuum()
        try checkSchemaAndMigrate()
        // The writer's temporary b-trees (the `IN (SELECT value FROM json_each(…))` of every
        // claim and settle) in memory: with SQLite's default, a statement that needs one creates
        // and deletes a file in /var/tmp, a handful of system calls at every commit. Set after
        // the one VACUUM above, whose temporary copy of the whole file must not be in memory;
        // readers (`sync list` sorting a large queue) keep SQLite's default.
        do {
            try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA temp_store = MEMORY") }
        } catch {
            throw Self.map(error, path: path, opening: true)
        }
        // Before this process's first enqueue, so the space comes back to the reserve first;
        // a disk already full leaves none, and the next drain refuses to start without it.
        _ = try? reserve.hold()
    }

    /// Makes the file give freed pages back (see `applyRetention`), before the migrations
    /// create the first table.
    ///
    /// SQLite fixes `auto_vacuum` when the first table is created, and GRDB has already put
    /// the file in WAL mode, which writes the header: setting the pragma alone no longer takes,
    /// only a `VACUUM` after it does. On a new, empty file that costs nothing; a file from an
    /// older Courier (auto_vacuum NONE) is rewritten once, here. A conversion that fails (a
    /// nearly full disk cannot hold the copy VACUUM makes) is left for the next opening rather
    /// than refusing the queue: the file then still reuses its free pages, it only keeps them.
    private func enableIncrementalVacuum() throws(QueueError) {
        let mode: Int
        do {
            mode = try pool.read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") ?? 0 }
        } catch {
            throw Self.map(error, path: path, opening: true)
        }
        // 1 (FULL) already gives pages back at every commit; only NONE is converted.
        guard mode == 0 else { return }
        do {
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
            }
        } catch {
            let mapped = Self.map(error, path: path, opening: true)
            if mapped.kind == .corruptDatabase { throw mapped }
        }
    }

    /// Reads an existing file through a read-only connection, which cannot change it (not
    /// even its journal mode), and refuses it when it is damaged, foreign or newer.
    private static func inspect(_ path: String) throws(QueueError) {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        guard size > 0 else { return }
        _ = try check(try connectReadOnly(path), path: path)
    }

    /// Opens `path` for reading only, for a queue that never writes; refuses what
    /// ``inspect(_:)`` refuses, and a file too old to read without migrating it.
    private static func openReadOnly(_ path: String) throws(QueueError) -> (DatabaseQueue, version: Int) {
        let reader = try connectReadOnly(path)
        let version = try check(reader, path: path)
        guard version >= Schema.oldestReadOnlyVersion else {
            throw .corruptDatabase(path: path, reason: "schema version \(version) cannot be read without migrating it; open it once for writing first")
        }
        return (reader, version)
    }

    /// Refuses a file that is not Courier's, or is newer; returns its schema version.
    ///
    /// A Courier file carries ``Schema/applicationID``. One that carries 0 is accepted only
    /// when it could be an older Courier's: no table but Courier's, and a version from before
    /// the id. Anything else is another application's database, left as it is.
    private static func check(_ reader: DatabaseQueue, path: String) throws(QueueError) -> Int {
        do {
            // One read: the header, the tables and the record of one moment, even while another
            // process migrates the file.
            let schema = try reader.read { db throws -> Schema.Recorded in
                let application = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
                if application != Schema.applicationID {
                    if application != 0 {
                        throw QueueError.corruptDatabase(path: path, reason: "a SQLite database of another application (application_id \(hex(application)))")
                    }
                    let foreignTables = try String.fetchAll(db, sql: """
                        SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name
                        """).filter { !Schema.tables.contains($0) }
                    if !foreignTables.isEmpty {
                        throw QueueError.corruptDatabase(path: path, reason: "a SQLite database of another application (tables: \(foreignTables.prefix(3).joined(separator: ", ")))")
                    }
                }
                let schema = try Schema.recorded(db)
                if application != Schema.applicationID && schema.version > Schema.lastUnstampedVersion {
                    throw QueueError.corruptDatabase(path: path, reason: "schema version \(schema.version) without Courier's application_id \(hex(Schema.applicationID))")
                }
                return schema
            }
            if schema.isNewer {
                throw QueueError.newerSchema(path: path, found: schema.applied, supported: Schema.version)
            }
            return schema.version
        } catch {
            throw map(error, path: path, opening: true)
        }
    }

    /// A read-only connection to `path` that a user without write access to the file or its
    /// folder can make, and that writes nothing there.
    ///
    /// A WAL file is read through its `-shm` index, which a read-only connection creates when
    /// it is missing. When it cannot (no write access to the folder), and no `-wal` or
    /// `-journal` file holds transactions the main file lacks, the main file is the whole
    /// database: it is then opened `immutable`, without locks, index or journal. Such a reader
    /// does not see what a writer commits after it opened; a command that reads once does not
    /// mind. (URI filenames: SQLite must interpret them, as Debian's and Ubuntu's builds do,
    /// with `SQLITE_USE_URI`.)
    private static func connectReadOnly(_ path: String) throws(QueueError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(30)
        configuration.label = "courier.queue.readonly"
        do {
            let reader = try DatabaseQueue(path: path, configuration: configuration)
            // The first read opens the WAL index: where a reader without write access fails.
            try reader.read { _ = try Int.fetchOne($0, sql: "SELECT count(*) FROM sqlite_master") }
            return reader
        } catch let error as DatabaseError where [.SQLITE_READONLY, .SQLITE_CANTOPEN].contains(error.resultCode.primaryResultCode)
            && !holdsTransactions(path + "-wal") && !holdsTransactions(path + "-journal") {
            do {
                return try DatabaseQueue(path: immutableURI(path), configuration: configuration)
            } catch {
                throw map(error, path: path, opening: true)
            }
        } catch {
            throw map(error, path: path, opening: true)
        }
    }

    /// Whether the journal file at `path` exists and is not empty.
    private static func holdsTransactions(_ path: String) -> Bool {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0) > 0
    }

    /// `file:PATH?immutable=1`, with the characters a URI gives a meaning escaped.
    private static func immutableURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    /// `0x43524951`, for messages.
    private static func hex(_ value: Int32) -> String { "0x" + String(UInt32(bitPattern: value), radix: 16, uppercase: true) }

    private func checkSchemaAndMigrate() throws(QueueError) {
        let path = self.path
        do {
            let schema = try pool.read(Schema.recorded)
            if schema.isNewer {
                throw QueueError.newerSchema(path: path, found: schema.applied, supported: Schema.version)
            }
            if schema.version < Schema.version { try migrate(with: Schema.migrator) }
        } catch {
            throw Self.map(error, path: path, opening: true)
        }
    }

    /// A pool on `path`, opened beside any other process opening the same file at the same
    /// moment. Opening sets the WAL journal mode, and SQLite answers a second process that
    /// sets it meanwhile with "database is locked" at once, without its busy handler; so a
    /// burst of first openings of a new file (`sync enqueue` from several scripts) tries again
    /// for up to two seconds. This is the synchronous opening path, which waits on SQLite's
    /// busy timeout anyway; the short pauses here are only ever taken under that contention.
    private static func openPool(_ path: String, configuration: Configuration) throws -> DatabasePool {
        var tries = 0
        while true {
            do {
                return try DatabasePool(path: path, configuration: configuration)
            } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_BUSY && tries < 200 {
                tries += 1
                usleep(UInt32.random(in: 2_000...10_000))
            }
        }
    }

    /// Runs the migrations, beside any other process opening the same new or older file at the
    /// same moment. GRDB reads which migrations are applied before each one's transaction, so
    /// two processes can both start one; the second then fails (`table entry already exists`)
    /// once the first commits. It then tries again: each try waits for the other's transaction
    /// (the busy timeout) and finds more of the work done, until none is left.
    private func migrate(with migrator: DatabaseMigrator) throws {
        let tries = 4 * Schema.version
        for attempt in 1...tries {
            do {
                try migrator.migrate(pool)
                return
            } catch let error as DatabaseError where attempt < tries {
                if error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB { throw error }
                if try pool.read(Schema.recorded).version >= Schema.version { return }
            }
        }
    }

    // MARK: - Plumbing

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction; refused on a read-only queue.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(QueueError) -> T {
        if readOnly { throw Self.readOnlyRefusal(path) }
        do {
            return try await pool.writeWithoutTransaction { db in
                try db.inImmediateTransaction { try body(db) }
            }
        } catch {
            throw Self.map(error, path: path, opening: false)
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(QueueError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Self.map(error, path: path, opening: false)
        }
    }

    /// What a write to a queue opened read-only throws: ``QueueError/readOnly(path:)``, on which
    /// `sync` exits with 73, as for a file it may not write.
    static func readOnlyRefusal(_ path: String) -> QueueError {
        .readOnly(path: path)
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
