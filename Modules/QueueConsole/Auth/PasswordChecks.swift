import HTTPCore
import NIOCore
import NIOPosix

/// Where console passwords are checked. A PBKDF2 hash of ``ConsoleUsers/defaultIterations``
/// rounds holds a core for a good part of a second, so it never runs on a thread of Swift's
/// cooperative pool: that pool has a thread per core (two here), and two sign-ins hashing on it
/// would stop every other task of the process (the queue's drain, its service, every page)
/// until they were done. The hashes run on NIO's thread pool instead, at most ``limit`` at
/// once; a sign-in beyond that is answered at once as ``Outcome/busy`` (the console's 429), so
/// a flood of wrong passwords costs at most ``limit`` cores (``defaultLimit``: half of them)
/// and queues nothing.
final class PasswordChecks: Sendable {
    /// What a check came to.
    enum Outcome: Sendable {
        /// The hash ran: the user, or `nil` for a wrong name or password.
        case checked(ConsoleUser?)
        /// ``limit`` checks were running: none was started.
        case busy
    }

    /// The most hashes running at once.
    let limit: Int
    private let running = LockedBox(0)

    /// Half the machine's cores, at least one: one on a 2-core machine, so a flood of wrong
    /// passwords leaves a core to everything else (and a thread of NIO's pool, which has one
    /// per core, to its other users).
    static let defaultLimit = max(1, System.coreCount / 2)

    /// Called on the pool's thread before each check: a test holds checks there, as a long
    /// hash would, without spending the CPU.
    private let beforeCheck: (@Sendable () -> Void)?

    init(limit: Int = defaultLimit, beforeCheck: (@Sendable () -> Void)? = nil) {
        self.limit = limit
        self.beforeCheck = beforeCheck
    }

    /// Runs `check` on NIO's thread pool when fewer than ``limit`` are running.
    func run(_ check: @escaping @Sendable () -> ConsoleUser?) async -> Outcome {
        let admitted = running.withLock { running -> Bool in
            guard running < limit else { return false }
            running += 1
            return true
        }
        guard admitted else { return .busy }
        defer { running.withLock { $0 -= 1 } }
        do {
            let beforeCheck = beforeCheck
            return .checked(try await NIOThreadPool.singleton.runIfActive {
                beforeCheck?()
                return check()
            })
        } catch {
            // The pool is shutting down: nobody is signed in.
            return .checked(nil)
        }
    }
}
