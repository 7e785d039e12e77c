import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Space kept aside beside the queue (`queue.db.reserve`), so that a drain which finds the
/// disk full can still record the outcome of every request it already sent.
///
/// A sent request whose outcome cannot be written is sent again by the next drain. So the
/// drain never starts without this file, and when one of its commits fails with a full disk
/// it stops claiming, deletes the file and records what it sent in the space that gives back
/// (``SQLiteQueueStore/recordOnFullDisk(_:now:)``). As databases do with their own reserve, the
/// blocks are really taken (`posix_fallocate`), not a sparse promise.
///
/// Nothing depends on the file for correctness: it holds no data, a crash leaves it whole,
/// short or missing, and ``hold()`` makes it again when it is missing or short.
struct DiskReserve: Sendable {
    let path: String
    /// Bytes kept: ``size(inlineBodyLimit:)``.
    let size: Int

    init(databasePath: String, inlineBodyLimit: Int) {
        path = databasePath + ".reserve"
        size = Self.size(inlineBodyLimit: inlineBodyLimit)
    }

    /// Enough to record one settlement of a row holding the largest inline body, which is what
    /// the recording after a full disk needs at most at once: it writes one settlement per
    /// transaction and lets the log start again from its beginning in between.
    ///
    /// Measured on SQLite's 4 KiB pages: settling a row whose body takes `P` overflow pages
    /// writes `2P + 9` pages to the log (the row is rewritten: a new chain of overflow pages,
    /// the old one freed, their pointer-map pages, the indexes and the lease), and the first
    /// one in a file grows the file by `P` pages for the new chain (the next ones reuse the
    /// chain the previous one freed). Kept: `3P + 16` log frames of 4,120 bytes, the 7 pages
    /// beyond the measured 9 as margin, rounded up to 64 KiB. The default 64 KiB inline limit
    /// (`P` = 17) keeps 320 KiB; bodies all in files (limit 0), 128 KiB.
    static func size(inlineBodyLimit: Int) -> Int {
        let overflowPages = (max(0, inlineBodyLimit) + 4091) / 4092
        let bytes = (3 * overflowPages + 16) * (4096 + 24)
        let unit = 64 * 1024
        return (bytes + unit - 1) / unit * unit
    }

    /// Makes the file when it is missing or shorter than ``size``.
    ///
    /// - Returns: whether the reserve is there (or another process is making it); `false`
    ///   when the file system cannot hold one for another reason than space (no preallocation,
    ///   a folder in the way), which leaves the queue without a reserve: its drains then run
    ///   without one.
    /// - Throws: ``QueueError/diskFull(path:)`` when the disk has no room for it.
    @discardableResult
    func hold() throws(QueueError) -> Bool {
        var info = stat()
        if lstat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFREG && Int(info.st_size) >= size { return true }
            // Short: a crash while it was made, or another process making it right now (that
            // one's file, unlinked, gives its blocks back when it closes it).
            guard unlink(path) == 0 || errno == ENOENT else { return false }
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { return true }
            if Self.isFull(errno) { throw .diskFull(path: path) }
            return false
        }
        defer { close(fd) }
        let failure = Self.allocate(fd, size)
        guard failure != 0 else { return true }
        // Not a reserve: gone, so it takes nothing (unless another process replaced it already).
        var mine = stat(), named = stat()
        if fstat(fd, &mine) == 0, lstat(path, &named) == 0, mine.st_ino == named.st_ino { unlink(path) }
        if Self.isFull(failure) { throw .diskFull(path: path) }
        return false
    }

    /// Deletes the file, giving its blocks back; returns whether there was one.
    @discardableResult
    func release() -> Bool {
        unlink(path) == 0
    }

    private static func isFull(_ code: Int32) -> Bool { code == ENOSPC || code == EDQUOT }

    /// Takes `size` bytes of blocks for `fd`; returns 0 or an `errno` value.
    private static func allocate(_ fd: Int32, _ size: Int) -> Int32 {
        #if canImport(Glibc)
        // glibc writes the blocks itself where the file system cannot preallocate.
        return posix_fallocate(fd, 0, off_t(size))
        #else
        let zeros = [UInt8](repeating: 0, count: 64 * 1024)
        var written = 0
        while written < size {
            let count = zeros.withUnsafeBytes { write(fd, $0.baseAddress, min($0.count, size - written)) }
            if count < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += count
        }
        return 0
        #endif
    }
}
