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
        let executable = Child.courierBench
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
