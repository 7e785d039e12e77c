public import Foundation

// Child processes for tests, awaited without blocking a thread of the cooperative pool.
//
// On Linux the pool is libdispatch's default-QoS root queue, one thread per core: two here.
// `waitUntilExit`, a semaphore, or a blocking read on a pool thread takes one of the two away
// from every other test in the process, the in-process HTTP server included. Work sent to
// `DispatchQueue.global()` is no way out: it runs on that same root queue, which adds a thread
// only after about a second of blocking. So pipes are read on threads of their own, and exits
// are awaited with `ChildProcess.exited()`, which the child's own reaper thread resumes.

/// What a tool run to its end printed, and how it ended.
public struct ToolResult: Sendable {
    /// The exit status (or the signal number, when a signal ended it).
    public var status: Int32
    /// Its standard output.
    public var stdout: Data
    /// Its standard error.
    public var stderr: Data

    /// Standard error as text.
    public var errorText: String { String(decoding: stderr, as: UTF8.self) }
}

/// Runs `executable` with `arguments` to its end (killing it after `limit`) and returns what it
/// printed; `input`, when given, is written to its standard input.
public func runTool(_ executable: String, _ arguments: [String], input: Data? = nil, limit: Duration = .seconds(60)) async throws -> ToolResult {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe(), errors = Pipe(), feed = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = input == nil ? FileHandle.nullDevice : feed
    try process.run()
    let stdout = readToEnd(output.fileHandleForReading)
    let stderr = readToEnd(errors.fileHandleForReading)
    if let input {
        let writer = feed.fileHandleForWriting
        await onOwnThread {
            try? writer.write(contentsOf: input)
            try? writer.close()
        }
    }
    let finished = await process.exited(limit: limit)
    if !finished {
        process.signal(SIGKILL)
        await process.exited()
    }
    let result = ToolResult(status: process.terminationStatus, stdout: await stdout.value, stderr: await stderr.value)
    guard finished else {
        throw TestServerError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(limit): \(result.errorText)")
    }
    return result
}

/// Reads `handle` to its end on a thread of its own and returns the bytes.
public func readToEnd(_ handle: FileHandle) -> Task<Data, Never> {
    Task { await onOwnThread { handle.readDataToEndOfFile() } }
}

/// Runs blocking `work` on a new thread, outside the cooperative pool, and returns its result.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}

/// The executable `name` built beside the running test bundle (`swift build --build-tests`
/// builds every executable of the package into the same folder).
public func builtProduct(named name: String) throws -> URL {
    var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = folder.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
           FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        folder.deleteLastPathComponent()
    }
    let fallback = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/\(name)")
    guard FileManager.default.isExecutableFile(atPath: fallback.path) else {
        throw TestServerError("\(name) is not built; run `swift build --build-tests` first")
    }
    return fallback
}
