import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder under the temporary directory, named `prefix-` and eight random characters.
func makeTemporaryFolder(_ prefix: String) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// Runs the built `sync` binary as a user would, and collects what it printed.
struct SyncRunner {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// Standard output parsed as JSON.
        func json() throws -> Any {
            try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        }
    }

    let database: String
    var environment: [String: String] = [:]
    /// A command that runs `sync` (such as `["/usr/bin/faketime", "-f", "-3d"]`), or none.
    var launcher: [String] = []
    /// The working directory, when not this process's.
    var directory: URL?

    /// A started process with pipes, for commands that run until signalled.
    func start(_ arguments: [String]) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        let sync = try builtProduct(named: "sync")
        if let tool = launcher.first {
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = Array(launcher.dropFirst()) + [sync.path, "--db", database] + arguments
        } else {
            process.executableURL = sync
            process.arguments = ["--db", database] + arguments
        }
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "SYNC_DB")
        env.removeValue(forKey: "NOTIFY_SOCKET")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out, err)
    }

    /// Runs `sync --db DATABASE arguments…` to its end (at most `limit`, then SIGKILL).
    @discardableResult
    func callAsFunction(_ arguments: String..., limit: Duration = .seconds(60)) async throws -> Result {
        try await run(arguments, limit: limit)
    }

    func run(_ arguments: [String], limit: Duration = .seconds(60)) async throws -> Result {
        let (process, out, err) = try start(arguments)
        // Read both pipes while the process runs, so a full pipe never blocks it.
        let stdout = readToEnd(out.fileHandleForReading)
        let stderr = readToEnd(err.fileHandleForReading)
        try await Self.wait(for: process, limit: limit)
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: await stdout.value, as: UTF8.self),
            stderr: String(decoding: await stderr.value, as: UTF8.self)
        )
    }

    /// Waits for `process` to end without blocking a cooperative thread; kills it after `limit`.
    static func wait(for process: Process, limit: Duration) async throws {
        guard await process.exited(limit: limit) else {
            kill(process.processIdentifier, SIGKILL)
            throw TestServerError("sync did not finish within \(limit)")
        }
    }
}

/// A unix datagram socket bound to a fresh path, standing in for systemd's notify socket.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("sync-notify-\(UUID().uuidString.prefix(8)).sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TestServerError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw TestServerError("bind: \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next datagram, waiting up to `limit`.
    func receive(limit: Duration = .seconds(60)) async -> String? {
        let deadline = ContinuousClock.now + limit
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// Datagrams until one contains `text`, waiting up to `limit` overall.
    func receive(containing text: String, limit: Duration = .seconds(60)) async -> [String] {
        let deadline = ContinuousClock.now + limit
        var seen: [String] = []
        while ContinuousClock.now < deadline, let message = await receive(limit: deadline - ContinuousClock.now) {
            seen.append(message)
            if message.contains(text) { break }
        }
        return seen
    }
}
