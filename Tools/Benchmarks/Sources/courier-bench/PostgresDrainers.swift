// The PostgreSQL scale-out curve's drainer processes: `courier-bench --postgres-drainer URL PORT`
// children, started and timed by `PostgresBench.scaleOut`. See PostgresBench.swift.
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
import Logging
import OfflineQueue
import OfflineQueuePostgres
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

extension PostgresBench {
    /// Starts `processes` drainers (`courier-bench --postgres-drainer URL PORT`), lets them open
    /// the queue, then tells them all to go at once and waits for every one to exit. Returns the
    /// entries they delivered per second of wall time from "go" to the last exit.
    static func scaleOut(processes: Int, url: String, port: Int, expected: Int) async throws -> Double {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var children: [Child] = []
        defer { for child in children { child.kill() } }
        for _ in 0..<processes {
            children.append(try Child(executable: executable, arguments: ["--postgres-drainer", url, String(port)]))
        }
        for child in children {
            guard let line = await child.line(), line == "ready" else { throw BenchError("a drainer did not start (see its error above)") }
        }
        let start = ContinuousClock.now
        for child in children { child.send("go\n") }
        var delivered = 0
        var reports: [String] = []
        for child in children {
            let line = await child.line() ?? ""
            let status = await child.exit()
            let fields = line.split(separator: " ")
            guard status == 0, fields.count == 3, fields[0] == "delivered", let count = Int(fields[1]) else {
                throw BenchError("a drainer failed (exit \(status)): \(line)")
            }
            delivered += count
            reports.append("\(count) in \(fields[2]) s")
        }
        let elapsed = ContinuousClock.now - start
        guard delivered == expected else { throw BenchError("the drainers delivered \(delivered) of \(expected) (\(reports))") }
        print("    \(processes) drainer\(processes == 1 ? "" : "s"): \(reports.joined(separator: ", "))")
        return Bench.rate(delivered, elapsed)
    }

    /// In a drainer process: opens the queue, says `ready`, waits for `go` on standard input,
    /// drains until nothing is due, prints `delivered COUNT SECONDS` and exits.
    static func drainer(url: String, port: Int) async throws {
        let (httpClient, client) = QueueBench.drainClients(port: port)
        let queue = try await OfflineQueue.open(configuration: QueueConfiguration(path: url, concurrency: concurrency), client: client, logger: quiet)
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        guard await Child.readLine(from: FileHandle.standardInput) == "go" else { throw BenchError("no go from the parent") }
        let start = ContinuousClock.now
        let summary = try await queue.drain()
        let elapsed = ContinuousClock.now - start
        await queue.close()
        try await httpClient.shutdown()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        FileHandle.standardOutput.write(Data("delivered \(summary.delivered) \(String(format: "%.3f", seconds))\n".utf8))
    }
}

/// A child process: lines read from its standard output and its exit status awaited without
/// blocking the cooperative pool (each read runs on a thread of its own; the exit comes from
/// `terminationHandler`).
final class Child: @unchecked Sendable {
    // @unchecked: `process` and the pipes are set once in `init`; `status` is behind `lock`.
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var status: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?

    init(executable: URL, arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.terminationHandler = { [self] process in
            let code = process.terminationStatus
            let waiter = lock.withLock { () -> CheckedContinuation<Int32, Never>? in
                status = code
                defer { self.waiter = nil }
                return self.waiter
            }
            waiter?.resume(returning: code)
        }
        try process.run()
    }

    /// The next line of the child's output, `nil` at its end.
    func line() async -> String? {
        await Self.readLine(from: output.fileHandleForReading)
    }

    func send(_ text: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// The exit status, once the child has exited.
    func exit() async -> Int32 {
        await withCheckedContinuation { continuation in
            let done = lock.withLock { () -> Int32? in
                if let status { return status }
                waiter = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    /// Ends a child still running (a failed measurement).
    func kill() {
        if process.isRunning { process.terminate() }
    }

    /// One line from `handle`, read byte by byte on a thread of its own.
    static func readLine(from handle: FileHandle) async -> String? {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var line = Data()
                while true {
                    let byte = handle.readData(ofLength: 1)
                    if byte.isEmpty {
                        continuation.resume(returning: line.isEmpty ? nil : String(decoding: line, as: UTF8.self))
                        return
                    }
                    if byte == Data("\n".utf8) { break }
                    line.append(byte)
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }
        }
    }
}
