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
/// ``sweepOrphans(keeping:)`` removes later, and never a row without its body.
struct BodyStore: Sendable {
    let folder: URL

    init(databasePath: String) {
        folder = URL(fileURLWithPath: databasePath + ".bodies", isDirectory: true)
    }

    func url(for name: String) -> URL { folder.appendingPathComponent(name) }

    /// Writes `stream` to a new file and returns its name and length.
    func write(_ stream: ByteStream) async throws(QueueError) -> (name: String, length: Int) {
        try ensureFolder()
        let name = UUID().uuidString.lowercased()
        let path = url(for: name).path
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.error(errno, path: path) }
        var length = 0
        do {
            for try await chunk in stream {
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
                length += chunk.count
            }
            guard fsync(fd) == 0 else { throw Self.error(errno, path: path) }
            close(fd)
        } catch {
            close(fd)
            unlink(path)
            if let error = error as? QueueError { throw error }
            throw .invalidRequest("cannot read the body: \(error)")
        }
        return (name, length)
    }

    func remove(_ names: [String]) {
        for name in names { unlink(url(for: name).path) }
    }

    /// Removes body files that no row names and that are older than `grace` (a file younger
    /// than that may belong to an enqueue still under way in another process).
    func sweepOrphans(keeping referenced: Set<String>, grace: TimeInterval = 600) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        let cutoff = Date().addingTimeInterval(-grace)
        for name in names where !referenced.contains(name) {
            let path = url(for: name).path
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast
            if modified < cutoff { unlink(path) }
        }
    }

    private func ensureFolder() throws(QueueError) {
        if mkdir(folder.path, 0o700) != 0 && errno != EEXIST {
            throw Self.error(errno, path: folder.path)
        }
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
