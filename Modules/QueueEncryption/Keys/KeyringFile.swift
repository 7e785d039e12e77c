import Foundation
#if canImport(Glibc)
package import Glibc
#elseif canImport(Darwin)
package import Darwin
#endif

/// The keyring file's I/O: opening with the safety checks, and writing without ever leaving
/// the keys open to other users, even for an instant, or half written.
package enum KeyringFile {
    /// Larger files are refused unread: a keyring of thousands of keys is still far smaller.
    static let maximumSize = 1 << 20

    /// A descriptor of the file at `path`, refused (`unsafeKeyring`) when it is a symbolic link,
    /// not a regular file, owned by a user other than this one or root, or open to any other
    /// user (see ``unsafeReason(_:descriptor:)``).
    static func openChecked(_ path: String) throws(SealError) -> Int32 {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP { throw .unsafeKeyring(path: path, reason: "it is a symbolic link") }
            throw .keyringIO(path: path, reason: describe(code))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw .keyringIO(path: path, reason: describe(code))
        }
        let mode = UInt32(info.st_mode) & 0o7777
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .unsafeKeyring(path: path, mode: mode, reason: "it is not a regular file")
        }
        if let reason = unsafeReason(info, descriptor: fd) {
            close(fd)
            throw .unsafeKeyring(path: path, mode: mode, reason: reason)
        }
        return fd
    }

    /// Why a regular file is not private to this user, or `nil` when it is.
    ///
    /// Other users' bits must be clear. So must the group's, unless the file has a POSIX
    /// access ACL: then the group bits show the ACL's mask, and what counts is whether the
    /// owning group, a named group, or a named user other than this one may read or write.
    /// That accepts systemd's credentials, which are root's with mode 0400 and an ACL entry
    /// giving the service's user read access.
    package static func unsafeReason(_ info: stat, descriptor fd: Int32) -> String? {
        let mode = UInt32(info.st_mode)
        let owner = UInt32(info.st_uid)
        if owner != geteuid() && owner != 0 { return "it is owned by uid \(owner), neither this user nor root" }
        if mode & 0o007 != 0 { return "other users may read or write it; chmod 600 it" }
        guard let acl = accessACL(fd) else {
            return mode & 0o070 != 0 ? "its group may read or write it; chmod 600 it" : nil
        }
        return acl.unsafeReason(euid: UInt32(geteuid()))
    }

    /// The file's whole text, read from the start of the open descriptor.
    static func read(_ fd: Int32, path: String) throws(SealError) -> String {
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(bytes.count)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .keyringIO(path: path, reason: describe(errno))
            }
            if count == 0 { break }
            bytes += buffer[..<count]
            guard bytes.count <= maximumSize else { throw .malformedKeyring(path: path, line: nil, reason: "the file is larger than 1 MiB") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .malformedKeyring(path: path, line: nil, reason: "the file is not UTF-8 text")
        }
        return text
    }

    /// Writes `text` to a new file at `path`, created with mode 0600 (never wider, not even
    /// before a chmod), then flushes it and its folder to disk. Throws `keyringExists` when
    /// anything, a dangling symbolic link included, is already at `path`.
    static func create(_ path: String, text: String) throws(SealError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST { throw .keyringExists(path: path) }
            throw .keyringIO(path: path, reason: describe(code))
        }
        do throws(SealError) {
            defer { close(fd) }
            try writeAll(fd, text: text, path: path)
        } catch {
            unlink(path)
            throw error
        }
        try syncFolder(of: path)
    }

    /// Replaces the file at `path` with `text` atomically: a new 0600 file in the same folder,
    /// flushed, renamed over `path`, then the folder flushed. A crash leaves the old file or
    /// the new one, never a mix, and at worst a hidden temporary file beside them.
    static func replace(_ path: String, text: String) throws(SealError) {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UInt32.random(in: .min ... .max)).tmp").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .keyringIO(path: temporary, reason: describe(errno)) }
        do throws(SealError) {
            defer { close(fd) }
            try writeAll(fd, text: text, path: temporary)
            guard rename(temporary, path) == 0 else { throw .keyringIO(path: path, reason: describe(errno)) }
        } catch {
            unlink(temporary)
            throw error
        }
        try syncFolder(of: path)
    }

    /// Writes `text` in full, sets mode 0600 exactly (whatever the umask), and flushes it.
    private static func writeAll(_ fd: Int32, text: String, path: String) throws(SealError) {
        guard fchmod(fd, 0o600) == 0 else { throw .keyringIO(path: path, reason: describe(errno)) }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .keyringIO(path: path, reason: describe(errno))
            }
            written += count
        }
        guard fsync(fd) == 0 else { throw .keyringIO(path: path, reason: describe(errno)) }
    }

    /// Flushes the folder holding `path`, so that a new name in it survives a crash.
    private static func syncFolder(of path: String) throws(SealError) {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .keyringIO(path: folder, reason: describe(errno)) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .keyringIO(path: folder, reason: describe(errno)) }
    }

    /// Runs `body` with the open, checked keyring at `path` locked against every other
    /// `withLock` on it (`flock`). A writer that replaced the file while this one waited for
    /// the lock is noticed (`path` names another file now), and the lock taken again on the
    /// new file, so that two rotations never lose each other's key.
    static func withLock<T>(_ path: String, _ body: (Int32) throws(SealError) -> T) throws(SealError) -> T {
        while true {
            let fd = try openChecked(path)
            defer { close(fd) }
            while flock(fd, LOCK_EX) != 0 {
                guard errno == EINTR else { throw .keyringIO(path: path, reason: describe(errno)) }
            }
            var held = stat(), current = stat()
            guard fstat(fd, &held) == 0 else { throw .keyringIO(path: path, reason: describe(errno)) }
            if lstat(path, &current) == 0 && current.st_dev == held.st_dev && current.st_ino == held.st_ino {
                return try body(fd)
            }
        }
    }

    /// Whether anything, a dangling symbolic link included, is at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 || errno != ENOENT
    }

    static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// The file's POSIX access ACL (`system.posix_acl_access`), or `nil` when it has none.
    private static func accessACL(_ fd: Int32) -> AccessACL? {
        #if os(Linux)
        guard let fgetxattr = libcFunction("fgetxattr", as: FGetXAttr.self) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let size = buffer.withUnsafeMutableBytes { fgetxattr(fd, "system.posix_acl_access", $0.baseAddress, $0.count) }
        guard size > 0 else { return nil }
        return AccessACL(Array(buffer[..<size]))
        #else
        return nil
        #endif
    }

    #if os(Linux)
    /// `fgetxattr(2)`, which Swift's Glibc module does not import (it leaves out `sys/xattr.h`).
    typealias FGetXAttr = @convention(c) (Int32, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int

    /// The C library function `name`, looked up in the running process.
    static func libcFunction<Function>(_ name: String, as type: Function.Type) -> Function? {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
    #endif
}
