import Foundation
import HTTPCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bodies too large for a row, as files in a folder beside the database (`queue.db.bodies/`).
///
/// A body file is written in full and flushed to disk before its row is committed, and
/// removed after its row is deleted, so a crash leaves at worst an orphan file, which
/// ``sweepOrphans(keeping:grace:)`` removes later, and never a row without its body.
///
/// The folder is private (0700) and is never reached through a symbolic link: every access
/// goes through a descriptor of the folder opened with `O_NOFOLLOW` and checked, so a folder
/// swapped for a link after opening is refused too. Names come from rows, which anyone who
/// can write the file can set, so only the form Courier writes (a lowercase UUID) is ever
/// opened or unlinked: a name such as `../queue.db` cannot leave the folder.
struct BodyStore: Sendable {
    let folder: URL
    /// The database whose bodies these are, for messages.
    let databasePath: String
    /// Whether the queue was opened read-only: nothing is written or removed.
    let readOnly: Bool

    init(databasePath: String, readOnly: Bool = false) {
        folder = URL(fileURLWithPath: databasePath + ".bodies", isDirectory: true)
        self.databasePath = databasePath
        self.readOnly = readOnly
    }

    /// The file holding body `name`, for reading it.
    ///
    /// - Throws: ``QueueError/corruptDatabase(path:reason:)`` when `name` is not one Courier
    ///   writes; ``QueueError/cannotCreate(path:reason:)`` when the folder is unsafe.
    func url(for name: String) throws(QueueError) -> URL {
        guard Self.isBodyName(name) else { throw invalidName(name) }
        try withFolder { _ throws(QueueError) in }
        return folder.appendingPathComponent(name)
    }

    /// Writes `stream` to a new file and returns its name and length.
    ///
    /// The writes and the `fsync` run off the cooperative pool (``BlockingIO``): an `fsync` of
    /// a large file holds its thread for as long as the disk takes. The chunks go out in
    /// batches of about 1 MiB, one hop each, each chunk one `write` as before; the last hop
    /// also flushes and closes the file.
    func write(_ stream: ByteStream) async throws(QueueError) -> (name: String, length: Int) {
        if readOnly { throw SQLiteQueueStore.readOnlyRefusal(folder.path) }
        try ensureFolder()
        let name = RandomUUID.lowercased()
        let path = folder.appendingPathComponent(name).path
        let fd = try withFolder { directory throws(QueueError) in
            let fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Self.error(errno, path: path) }
            return fd
        }
        var length = 0
        do {
            var batch: [Data] = [], batchBytes = 0
            for try await chunk in stream {
                batch.append(chunk)
                batchBytes += chunk.count
                length += chunk.count
                if batchBytes >= Self.writeBatch {
                    try await Self.write(batch, to: fd, path: path, last: false)
                    batch = []
                    batchBytes = 0
                }
            }
            try await Self.write(batch, to: fd, path: path, last: true)
        } catch {
            close(fd)
            remove([name])
            if let error = error as? QueueError { throw error }
            throw .invalidRequest("cannot read the body: \(error)")
        }
        return (name, length)
    }

    /// How many bytes of a body's chunks one hop off the pool writes.
    private static let writeBatch = 1 << 20

    /// `chunks` written to `fd`, on a blocking-work queue; with `last`, then flushed to disk
    /// and closed (not closed when anything fails: the caller closes and removes the file).
    private static func write(_ chunks: [Data], to fd: Int32, path: String, last: Bool) async throws(QueueError) {
        try await BlockingIO.run { () throws(QueueError) in
            for chunk in chunks {
                let failed = chunk.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Int32 in
                    var offset = 0
                    while offset < raw.count {
                        let written = posixWrite(fd, raw.baseAddress! + offset, raw.count - offset)
                        if written < 0 {
                            if errno == EINTR { continue }
                            return errno
                        }
                        offset += written
                    }
                    return 0
                }
                if failed != 0 { throw Self.error(failed, path: path) }
            }
            guard last else { return }
            guard fsync(fd) == 0 else { throw Self.error(errno, path: path) }
            close(fd)
        }
    }

    /// Unlinks the body files `names`, skipping any name Courier does not write.
    func remove(_ names: [String]) {
        let names = names.filter(Self.isBodyName)
        guard !readOnly, !names.isEmpty else { return }
        // An unsafe folder was refused at opening; one that became unsafe since is left alone.
        try? withFolder { directory throws(QueueError) in
            for name in names { unlinkat(directory, name, 0) }
        }
    }

    /// Removes body files that no row names and that are older than `grace` (a file younger
    /// than that may belong to an enqueue still under way in another process).
    ///
    /// Only regular files named as Courier names them are candidates: a file of another
    /// program, a link or a folder in there is left alone, and nothing outside is reached.
    func sweepOrphans(keeping referenced: Set<String>, grace: TimeInterval = 600) {
        guard !readOnly else { return }
        let cutoff = Date().addingTimeInterval(-grace).timeIntervalSince1970
        try? withFolder { directory throws(QueueError) in
            for name in Self.names(in: directory) where Self.isBodyName(name) && !referenced.contains(name) {
                var info = stat()
                guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                #if canImport(Darwin)
                let modified = Double(info.st_mtimespec.tv_sec)
                #else
                let modified = Double(info.st_mtim.tv_sec)
                #endif
                if modified < cutoff { unlinkat(directory, name, 0) }
            }
        }
    }

    /// Refuses a folder that a symbolic link stands for, that is not a folder, or that other
    /// users may enter; a missing folder is fine (it is made at the first large body).
    func checkFolder() throws(QueueError) {
        var info = stat()
        guard lstat(folder.path, &info) == 0 else {
            if errno == ENOENT { return }
            throw Self.error(errno, path: folder.path)
        }
        try Self.checkFolder(info, path: folder.path)
    }

    /// Whether `name` has the one form ``write(_:)`` gives: a lowercase UUID, 36 characters.
    static func isBodyName(_ name: String) -> Bool {
        name.utf8.count == 36 && UUID(uuidString: name)?.uuidString.lowercased() == name
    }

    private func ensureFolder() throws(QueueError) {
        if mkdir(folder.path, 0o700) != 0 && errno != EEXIST {
            throw Self.error(errno, path: folder.path)
        }
    }

    /// Runs `body` with a descriptor of the folder, opened without following a link and
    /// checked like ``checkFolder()``, so what `body` reaches is inside the folder we checked.
    private func withFolder<T>(_ body: (Int32) throws(QueueError) -> T) throws(QueueError) -> T {
        let directory = open(folder.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directory >= 0 else {
            // ELOOP or ENOTDIR: the last component is a link (or a file).
            if errno == ELOOP || errno == ENOTDIR { throw Self.unsafe(folder.path, "it is a symbolic link or not a folder") }
            throw Self.error(errno, path: folder.path)
        }
        defer { close(directory) }
        var info = stat()
        guard fstat(directory, &info) == 0 else { throw Self.error(errno, path: folder.path) }
        try Self.checkFolder(info, path: folder.path)
        return try body(directory)
    }

    private static func checkFolder(_ info: stat, path: String) throws(QueueError) {
        switch info.st_mode & S_IFMT {
        case S_IFDIR: break
        case S_IFLNK: throw unsafe(path, "it is a symbolic link")
        default: throw unsafe(path, "it is not a folder")
        }
        let mode = info.st_mode & 0o7777
        if mode & 0o077 != 0 {
            throw unsafe(path, "other users may use it (mode \(String(mode, radix: 8))); it must be 0700")
        }
    }

    /// The names in the folder `directory`, read through a duplicate of its descriptor.
    private static func names(in directory: Int32) -> [String] {
        let copy = dup(directory)
        guard copy >= 0, let stream = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private static func unsafe(_ path: String, _ reason: String) -> QueueError {
        .cannotCreate(path: path, reason: "refusing the body folder: \(reason)")
    }

    private func invalidName(_ name: String) -> QueueError {
        .corruptDatabase(path: databasePath, reason: "a row names body file \(name.debugDescription), which is not a name Courier writes")
    }

    static func error(_ code: Int32, path: String) -> QueueError {
        switch code {
        case ENOSPC, EDQUOT: .diskFull(path: path)
        case EROFS, EACCES, EPERM: .cannotCreate(path: path, reason: String(cString: strerror(code)))
        default: .io(path: path, reason: String(cString: strerror(code)))
        }
    }
}

/// `write(2)`, named apart from ``BodyStore/write(_:)``.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, buffer, count)
    #else
    Darwin.write(fd, buffer, count)
    #endif
}
