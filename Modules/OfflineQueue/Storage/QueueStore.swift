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

    /// One finished attempt, to record.
    struct Settlement: Sendable {
        var id: EntryID
        var transition: Transition
    }

    let pool: DatabasePool

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
        try enableIncrementalVacuum()
        try checkSchemaAndMigrate()
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
            if case .corruptDatabase = mapped { throw mapped }
        }
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

    // MARK: - Plumbing

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(QueueError) -> T {
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

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(QueueError) -> T {
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
