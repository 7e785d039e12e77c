import Foundation
import HTTPCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A drainer's hold on its claims, which dies with its process.
///
/// Each drainer names itself `host:pid:token:boot` in the rows it claims and holds an
/// exclusive `flock` on `<db>.owners/<token>.lock` for as long as it lives. The kernel drops
/// that lock when the process ends in any way (exit, crash, `kill -9`) and at every reboot, so
/// another drainer that can take the lock knows the owner is gone and takes its entries back at
/// once, with no wait for a lease to lapse. `flock` (not `fcntl`) locks belong to the open file,
/// so two queues in one process are told apart too.
final class OwnerLock: Sendable {
    /// The owner string stored in `lease_owner`.
    let owner: String
    private let folder: String
    private let descriptor = LockedBox<Int32>(-1)

    init(databasePath: String, boot: String) {
        folder = databasePath + ".owners"
        let token = UUID().uuidString.prefix(12).lowercased()
        let host = ProcessInfo.processInfo.hostName.replacingOccurrences(of: ":", with: "_")
        owner = "\(host):\(getpid()):\(token):\(boot)"
    }

    deinit { release() }

    /// Lets go of the lock, as the process's end would: another drainer then takes back the
    /// entries this one held. Releasing twice does nothing.
    func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            unlink(Self.lockPath(folder: folder, owner: owner))
            close(fd)
            fd = -1
        }
    }

    /// Takes the lock unless this drainer holds it already. Called before the first claim, so
    /// every row naming this owner was claimed while the lock was held.
    func acquire() throws(QueueError) {
        let failure = descriptor.withLock { fd -> QueueError? in
            guard fd < 0 else { return nil }
            if mkdir(folder, 0o700) != 0 && errno != EEXIST { return BodyStore.error(errno, path: folder) }
            let path = Self.lockPath(folder: folder, owner: owner)
            let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard opened >= 0 else { return BodyStore.error(errno, path: path) }
            guard flock(opened, LOCK_EX | LOCK_NB) == 0 else {
                let code = errno
                close(opened)
                return BodyStore.error(code, path: path)
            }
            fd = opened
            return nil
        }
        if let failure { throw failure }
    }

    /// What is known of `owner`, another drainer named in a row.
    enum Liveness: Equatable {
        /// Its lock is held: the process lives.
        case alive
        /// Its process is gone (its lock was free, or it belongs to an earlier boot).
        case gone
        /// Not a name this version writes (an older Courier's): only its lease can tell.
        case unknown
    }

    /// Whether `owner` still lives. `boot` is the current boot. When `takeOver` is set and the
    /// owner is gone, its lock file is removed (the caller takes its entries back).
    static func liveness(of owner: String, databasePath: String, boot: String, takeOver: Bool) -> Liveness {
        let parts = owner.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 4, isToken(parts[2]) else { return .unknown }
        let path = lockPath(folder: databasePath + ".owners", owner: owner)
        if parts[3] != boot {
            if takeOver { unlink(path) }
            return .gone
        }
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT ? .gone : .alive }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return .alive }
        if takeOver { unlink(path) }
        flock(fd, LOCK_UN)
        return .gone
    }

    /// The process id in `owner`, for messages.
    static func processID(of owner: String) -> String? {
        let parts = owner.split(separator: ":")
        return parts.count >= 2 ? String(parts[1]) : nil
    }

    private static func lockPath(folder: String, owner: String) -> String {
        let token = owner.split(separator: ":", omittingEmptySubsequences: false).dropFirst(2).first ?? "invalid"
        return "\(folder)/\(token).lock"
    }

    /// Tokens are 12 lowercase hex digits and dashes: nothing that could leave the folder.
    private static func isToken(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 36 && text.allSatisfy { $0.isHexDigit || $0 == "-" }
    }
}
