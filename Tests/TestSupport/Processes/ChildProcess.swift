public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Child processes for tests, started with `posix_spawn` instead of Foundation's `Process`.
//
// swift-corelibs-foundation 6.3's `Process.run()` can crash the whole test process:
// `findMaximumOpenFromProcSelfFD()` copies a `dirent.d_name` whole (256 bytes) out of glibc's
// readdir buffer and reads past its end (fixed upstream by swift-corelibs-foundation#5472).
// ``ChildProcess`` offers the part of `Process` the tests use, so call sites change little.
//
// What a child gets:
// - its three standard streams from `standardInput`, `standardOutput` and `standardError`
//   (a `Pipe`, a `FileHandle`, `FileHandle.nullDevice`, or nil to share this process's);
// - no other descriptor of this process: every descriptor from 3 up is closed in the child
//   (`posix_spawn_file_actions_addclosefrom_np`), so it holds no socket of the test process and
//   no end of another child's pipes (a pipe reaches its end when its own child ends);
// - an empty signal mask and every signal at its default disposition, whatever this process
//   blocks or ignores (SIGPIPE, SIGTERM, SIGCHLD...);
// - `environment` (nil: this process's), and `currentDirectoryURL` (nil: this process's).
//
// Each child is reaped by a thread of its own blocked in `waitid` (never a thread of the
// cooperative pool). That thread notes that the child ended, then reaps it under the lock that
// ``signal(_:)`` takes: a signal is never sent to a pid that was reaped, and so may be reused.
// No SIGCHLD handler is installed.

/// A stream for a child's standard input, output or error: a `Pipe` (the child gets the end it
/// needs; this process's copy of that end is closed once the child runs) or a `FileHandle`
/// (the child gets a copy of it; `FileHandle.nullDevice` gives it `/dev/null`).
public protocol ChildProcessStream: AnyObject {}

extension Pipe: ChildProcessStream {}
extension FileHandle: ChildProcessStream {}

/// Why a child could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// A child process started with `posix_spawn`, with the part of Foundation's `Process` API the
/// tests use. Configure it, call ``run()`` once, then wait with ``exited()``,
/// ``exited(limit:)`` or (only off the cooperative pool) ``waitUntilExit()``.
///
/// `@unchecked Sendable`: the configuration is set by one task before ``run()`` and only read
/// by ``run()``; everything that changes afterwards (pid, status, waiters) is behind `lock`.
public final class ChildProcess: @unchecked Sendable {
    /// How a child ended.
    public enum TerminationReason: Sendable, Equatable {
        /// It exited; ``ChildProcess/terminationStatus`` is its exit status.
        case exit
        /// A signal ended it; ``ChildProcess/terminationStatus`` is the signal's number.
        case uncaughtSignal
    }

    /// The program to run.
    public var executableURL: URL?
    /// Its arguments, after the program's path (which is `argv[0]`).
    public var arguments: [String]?
    /// Its whole environment; nil gives it this process's.
    public var environment: [String: String]?
    /// Its working directory; nil gives it this process's.
    public var currentDirectoryURL: URL?
    /// Its standard input; nil shares this process's.
    public var standardInput: (any ChildProcessStream)?
    /// Its standard output; nil shares this process's.
    public var standardOutput: (any ChildProcessStream)?
    /// Its standard error; nil shares this process's.
    public var standardError: (any ChildProcessStream)?

    private struct State {
        var started = false
        var pid: pid_t = 0
        var running = false
        /// Set once the reaper has collected the child: its pid may belong to another process now.
        var reaped = false
        var status: Int32 = 0
        var reason: TerminationReason = .exit
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    /// Guards `state`; also the condition ``waitUntilExit()`` waits on.
    private let lock = NSCondition()
    private var state = State()

    /// A process to configure and then ``run()``.
    public init() {}

    private func withState<T>(_ body: (inout State) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// The child's pid once started (0 before).
    public var processIdentifier: pid_t { withState { $0.pid } }

    /// Whether the child was started and has not been reaped yet.
    public var isRunning: Bool { withState { $0.running } }

    /// The exit status, or the number of the signal that ended the child (see
    /// ``terminationReason``). Like Foundation's, only meaningful once the child ended: asking
    /// earlier is a programming error.
    public var terminationStatus: Int32 {
        withState { state in
            precondition(state.started && !state.running, "terminationStatus of a child that has not ended")
            return state.status
        }
    }

    /// Whether the child exited or was ended by a signal; only meaningful once it ended.
    public var terminationReason: TerminationReason {
        withState { state in
            precondition(state.started && !state.running, "terminationReason of a child that has not ended")
            return state.reason
        }
    }

    /// Sends `signal` to the child unless it was already reaped (then its pid may name another
    /// process, and nothing is sent). Returns whether it was sent.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        withState { state in
            guard state.started, !state.reaped else { return false }
            return kill(state.pid, signal) == 0
        }
    }

    /// Sends SIGTERM to the child (if it has not been reaped).
    public func terminate() {
        signal(SIGTERM)
    }

    /// Blocks the calling thread until the child has ended and been reaped. Only for a thread
    /// of its own, never for async code (use ``exited()``).
    public func waitUntilExit() {
        lock.lock()
        defer { lock.unlock() }
        while state.running { lock.wait() }
    }

    /// Waits for the child to end without blocking a thread of the cooperative pool. Returns
    /// early if the task is cancelled.
    public func exited() async {
        let id = withState { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = withState { state -> Bool in
                    if !state.running || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            withState { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Waits at most `limit` for the child to end; returns whether it ended.
    public func exited(limit: Duration) async -> Bool {
        if !isRunning { return true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.exited() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
        return !isRunning
    }

    /// Starts the child. Throws if it is already started, has no ``executableURL``, or cannot
    /// be spawned (such as a program that does not exist).
    public func run() throws {
        guard let executableURL else { throw ChildProcessError("no executableURL to run") }
        try withState { state in
            guard !state.started else { throw ChildProcessError("\(executableURL.path) was already started") }
            state.started = true
        }
        let path = executableURL.path
        var closeAfterSpawn: [FileHandle] = []
        let pid: pid_t
        do {
            pid = try spawn(path, closeAfterSpawn: &closeAfterSpawn)
        } catch {
            withState { $0.started = false }
            throw error
        }
        withState { state in
            state.pid = pid
            state.running = true
        }
        // This process's copies of the child's ends, as Foundation closes them: the write end
        // of an output pipe must go for a read of it to reach its end when the child ends.
        var closed = Set<ObjectIdentifier>()
        for handle in closeAfterSpawn where closed.insert(ObjectIdentifier(handle)).inserted {
            try? handle.close()
        }
        Thread.detachNewThread { [self] in reap(pid) }
    }

    /// Spawns the child and returns its pid; `closeAfterSpawn` gets the pipe ends that are the
    /// child's alone.
    private func spawn(_ path: String, closeAfterSpawn: inout [FileHandle]) throws -> pid_t {
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        try check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init")
        defer { posix_spawn_file_actions_destroy(&actions) }
        try check(posix_spawnattr_init(&attributes), "posix_spawnattr_init")
        defer { posix_spawnattr_destroy(&attributes) }

        // The three streams.
        let streams: [(target: Int32, stream: (any ChildProcessStream)?)] = [
            (STDIN_FILENO, standardInput), (STDOUT_FILENO, standardOutput), (STDERR_FILENO, standardError),
        ]
        for (target, stream) in streams {
            switch stream {
            case nil:
                #if canImport(Darwin)
                try check(posix_spawn_file_actions_addinherit_np(&actions, target), "addinherit_np")
                #endif
                continue
            case let pipe as Pipe:
                let childEnd = target == STDIN_FILENO ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                try check(posix_spawn_file_actions_adddup2(&actions, childEnd.fileDescriptor, target), "adddup2")
                closeAfterSpawn.append(childEnd)
            case let handle as FileHandle where handle === FileHandle.nullDevice:
                let flags = target == STDIN_FILENO ? O_RDONLY : O_WRONLY
                try check(posix_spawn_file_actions_addopen(&actions, target, "/dev/null", flags, 0), "addopen /dev/null")
            case let handle as FileHandle:
                try check(posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target), "adddup2")
            default:
                throw ChildProcessError("a standard stream must be a Pipe or a FileHandle, not \(type(of: stream))")
            }
        }

        // No other descriptor of this process.
        #if canImport(Darwin)
        let flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_CLOEXEC_DEFAULT)
        #else
        let flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        guard let closeFrom = SpawnExtensions.closeFrom else {
            throw ChildProcessError("posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later) is not available: cannot keep this process's descriptors from \(path)")
        }
        try check(closeFrom(&actions, 3), "addclosefrom_np")
        #endif

        if let directory = currentDirectoryURL {
            guard let chdir = SpawnExtensions.changeDirectory else {
                throw ChildProcessError("posix_spawn_file_actions_addchdir_np is not available: cannot start \(path) in \(directory.path)")
            }
            try check(directory.path.withCString { chdir(&actions, $0) }, "addchdir_np \(directory.path)")
        }

        // An empty mask; every signal (but SIGKILL and SIGSTOP, which cannot be) at its default.
        var mask = sigset_t()
        sigemptyset(&mask)
        try check(posix_spawnattr_setsigmask(&attributes, &mask), "setsigmask")
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        try check(posix_spawnattr_setsigdefault(&attributes, &defaults), "setsigdefault")
        try check(posix_spawnattr_setflags(&attributes, Int16(flags)), "setflags")

        // argv and envp as C strings, alive until posix_spawn returns.
        let argv = CStrings([path] + (arguments ?? []))
        let envp = CStrings((environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" })
        var pid: pid_t = 0
        let result = argv.withPointers { argvPointer in
            envp.withPointers { posix_spawn(&pid, path, &actions, &attributes, argvPointer, $0) }
        }
        guard result == 0 else {
            throw ChildProcessError("cannot start \(path): \(String(cString: strerror(result)))")
        }
        return pid
    }

    private func check(_ result: Int32, _ what: String) throws {
        guard result == 0 else { throw ChildProcessError("\(what) failed: \(String(cString: strerror(result)))") }
    }

    /// On a thread of its own: waits for the child to end, then reaps it under the lock.
    private func reap(_ pid: pid_t) {
        // Wait without reaping (WNOWAIT), so the pid stays the child's until the lock is held.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
            guard errno == EINTR else { break }
        }
        let waiters = withState { state -> [CheckedContinuation<Void, Never>] in
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, 0) } while result == -1 && errno == EINTR
            if result == pid {
                if Self.exited(status) {
                    state.status = (status >> 8) & 0xff
                    state.reason = .exit
                } else {
                    state.status = status & 0x7f
                    state.reason = .uncaughtSignal
                }
            } else {
                // Reaped by someone else (a waitpid(-1) elsewhere in this process): status unknown.
                state.status = -1
                state.reason = .exit
            }
            state.running = false
            state.reaped = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        lock.broadcast()
        for waiter in waiters { waiter.resume() }
    }

    /// WIFEXITED, which Swift does not import (a macro).
    private static func exited(_ status: Int32) -> Bool { status & 0x7f == 0 }
}

/// glibc's posix_spawn extensions that Swift's Glibc module does not import, looked up by name.
private enum SpawnExtensions {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34 and later).
    static let closeFrom: CloseFrom? = look(up: "posix_spawn_file_actions_addclosefrom_np")
    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29 and later, macOS 26).
    static let changeDirectory: ChangeDirectory? = look(up: "posix_spawn_file_actions_addchdir_np")

    private static func look<F>(up name: String) -> F? {
        #if canImport(Darwin)
        let handle = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #else
        let handle: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
        #endif
        guard let symbol = dlsym(handle, name) else { return nil }
        return unsafeBitCast(symbol, to: F.self)
    }
}

/// Strings copied to C strings, freed on deinit; with a NULL-terminated array of them.
private final class CStrings {
    private let pointers: [UnsafeMutablePointer<CChar>?]

    init(_ strings: [String]) {
        pointers = strings.map { strdup($0) } + [nil]
    }

    deinit {
        for pointer in pointers { free(pointer) }
    }

    func withPointers<T>(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
        pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
