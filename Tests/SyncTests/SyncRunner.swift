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

    /// A started process with pipes, for commands that run until signalled; `input` is
    /// written to its standard input (then closed), which is otherwise empty.
    func start(_ arguments: [String], input: String? = nil) throws -> (ChildProcess, Pipe, Pipe) {
        let process = ChildProcess()
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
        // A proxy of the machine's own would take the tests' loopback traffic: only a test's
        // own `environment` names one.
        for name in ["http_proxy", "https_proxy", "all_proxy", "no_proxy"] {
            env.removeValue(forKey: name)
            env.removeValue(forKey: name.uppercased())
        }
        for (key, value) in environment { env[key] = value }
        process.environment = env
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = input.map { _ in Pipe() }
        if let stdin { process.standardInput = stdin } else { process.standardInput = FileHandle.nullDevice }
        try process.run()
        if let stdin, let input {
            try stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
        return (process, out, err)
    }

    /// Runs `sync --db DATABASE arguments…` to its end (at most `limit`, then SIGKILL).
    @discardableResult
    func callAsFunction(_ arguments: String..., limit: Duration = .hangGuard) async throws -> Result {
        try await run(arguments, limit: limit)
    }

    func run(_ arguments: [String], input: String? = nil, limit: Duration = .hangGuard) async throws -> Result {
        let (process, out, err) = try start(arguments, input: input)
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
    static func wait(for process: ChildProcess, limit: Duration) async throws {
        guard await process.exited(limit: limit) else {
            process.signal(SIGKILL)
            throw TestServerError("sync did not finish within \(limit)")
        }
    }
}

