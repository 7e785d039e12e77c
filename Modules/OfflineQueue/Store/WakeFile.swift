import Foundation
import HTTPCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SQLite store's `NOTIFY`: an empty file beside the queue, `<db>.wake`, whose times every
/// commit that makes entries due touches (an enqueue, a retry, a resume), and that every
/// drainer of the file watches with inotify, so a service in one process hears at once what
/// another process enqueued.
///
/// Touching writes no data (`utimensat`: one system call, no page written, no `fsync`) and is
/// best effort: a process that cannot (another user's file, a read-only folder) leaves the
/// drainers to their poll, which stays as the slow fallback. Only drainers watch, from their
/// first claim to the store's shutdown, and the first to watch makes the file; an enqueuing
/// process starts no thread and makes no file.
final class WakeFile: Sendable {
    let path: String
    private let watcher = LockedBox<WakeWatcher?>(nil)

    init(databasePath: String) {
        path = databasePath + ".wake"
    }

    /// A file of the same kind at `path`: `<db>.settled`, which settling commits ring and
    /// awaited outcomes watch (``SQLiteQueueStore/observeSettlements(_:)``).
    init(path: String) {
        self.path = path
    }

    deinit { stop() }

    /// Tells every watcher that entries became due. A missing file means no drainer has
    /// watched yet (a watcher makes it), so there is no one to tell and nothing is created.
    func ring() {
        _ = utimensat(AT_FDCWD, path, nil, AT_SYMLINK_NOFOLLOW)
    }

    /// Starts watching, unless this store watches already: `wake` is called (on the watcher's
    /// own thread) after each ring from any process, several rings close together may arrive
    /// as one. Returns without watching where inotify is missing, or when the file cannot be
    /// made or watched.
    func watch(_ wake: @escaping @Sendable () -> Void) {
        #if os(Linux)
        watcher.withLock { watcher in
            guard watcher == nil else { return }
            watcher = WakeWatcher(path: path, wake: wake)
        }
        #endif
    }

    /// Whether a watcher runs (it does not where inotify is missing, or when the file could not
    /// be made or watched, such as when this user has no inotify instance left).
    var isWatching: Bool { watcher.current != nil }

    /// Stops the watcher's thread, if one runs.
    func stop() {
        watcher.withLock { watcher in
            watcher?.stop()
            watcher = nil
        }
    }

    /// Makes the empty file, mode 0600, never through a symbolic link.
    static func create(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
    }
}

/// The thread behind ``WakeFile/watch(_:)``: blocks in `poll` on an inotify descriptor and a
/// stop pipe. A file deleted or replaced under it is made again and watched anew, with a wake
/// for what the gap may have hidden.
///
/// Sendable: its stored properties are constants; the descriptors are used by the thread, and
/// `stop` only writes to the pipe, once, under `stopped`'s lock.
private final class WakeWatcher: Sendable {
    private let stopped = LockedBox(false)
    private let stopRead: Int32
    private let stopWrite: Int32

    init?(path: String, wake: @escaping @Sendable () -> Void) {
        #if os(Linux)
        let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else { return nil }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            close(inotify)
            return nil
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        stopRead = ends[0]
        stopWrite = ends[1]
        guard Self.addWatch(inotify, path) >= 0 else {
            close(inotify)
            close(stopRead)
            close(stopWrite)
            return nil
        }
        let thread = Thread { [stopRead, stopWrite] in
            Self.run(inotify: inotify, stop: stopRead, path: path, wake: wake)
            close(inotify)
            close(stopRead)
            close(stopWrite)
        }
        thread.name = "courier.wake"
        thread.start()
        #else
        return nil
        #endif
    }

    func stop() {
        stopped.withLock { stopped in
            guard !stopped else { return }
            stopped = true
            var byte: UInt8 = 1
            _ = write(stopWrite, &byte, 1)
        }
    }

    #if os(Linux)
    private static let mask = UInt32(IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

    /// Watches `path`, making it first when it is missing.
    private static func addWatch(_ inotify: Int32, _ path: String) -> Int32 {
        if access(path, F_OK) != 0 { WakeFile.create(path) }
        return inotify_add_watch(inotify, path, mask | UInt32(IN_DONT_FOLLOW))
    }

    private static func run(inotify: Int32, stop: Int32, path: String, wake: @Sendable () -> Void) {
        var descriptors = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        let size = 4096
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[1].revents != 0 { return }
            guard descriptors[0].revents != 0 else { continue }
            var lostWatch = false
            var rang = false
            while true {
                let count = read(inotify, buffer, size)
                if count <= 0 { break }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                    if event.mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 { lostWatch = true }
                    if event.mask & UInt32(IN_ATTRIB | IN_CLOSE_WRITE) != 0 { rang = true }
                    offset += MemoryLayout<inotify_event>.size + Int(event.len)
                }
            }
            if lostWatch {
                // A new file under the same name: watch it, and wake for a ring it may have missed.
                _ = addWatch(inotify, path)
                rang = true
            }
            if rang { wake() }
        }
    }
    #endif
}
