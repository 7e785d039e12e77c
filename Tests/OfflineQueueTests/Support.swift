import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import OfflineQueue
import Reachability
import TestSupport

/// A fresh folder under the system temp folder, removed by the caller with `remove()`.
struct TempFolder {
    let url: URL

    init(_ prefix: String = "courier-queue") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    var databasePath: String { url.appendingPathComponent("queue.db").path }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// One transport for the whole test target: AsyncHTTPClient's event loops are costly to make.
let sharedTransport = AsyncHTTPClientTransport()

/// A queue on `path` whose client points at `server`.
func makeQueue(
    path: String,
    server: TestHTTPServer,
    monitor: (any NetworkMonitor)? = nil,
    policy: DeliveryPolicy = DeliveryPolicy(backoff: Backoff(base: .milliseconds(20), cap: .milliseconds(100))),
    concurrency: Int = 8,
    timeout: Duration = .seconds(30),
    plugins: [any Plugin] = [],
    tweak: (inout QueueConfiguration) -> Void = { _ in }
) throws -> OfflineQueue {
    var configuration = QueueConfiguration(path: path, durability: .normal, policy: policy, concurrency: concurrency)
    tweak(&configuration)
    var clientConfiguration = ClientConfiguration(baseURL: server.baseURL, timeout: timeout)
    clientConfiguration.plugins = plugins
    let client = APIClient(configuration: clientConfiguration, transport: sharedTransport)
    return try OfflineQueue(configuration: configuration, client: client, monitor: monitor)
}

/// The idempotency keys the server saw, in arrival order.
func idempotencyKeys(_ server: TestHTTPServer, path: String? = nil) -> [String] {
    server.requests.filter { path == nil || $0.path == path }.compactMap { $0.values(of: "Idempotency-Key").first }
}


/// Drains until nothing is open, at most `rounds` drains, and returns the summaries added up.
/// In between it moves `clock` (the queue's injected clock) to the next due time, or, for a
/// queue on the system clock, sleeps until then.
@discardableResult
func drainUntilSettled(_ queue: OfflineQueue, advancing clock: ManualQueueClock? = nil, rounds: Int = 50) async throws -> DrainSummary {
    var total = DrainSummary()
    for _ in 0..<rounds {
        let summary = try await queue.drain()
        total.delivered += summary.delivered
        total.failed += summary.failed
        total.dead += summary.dead
        total.waitingForNetwork += summary.waitingForNetwork
        total.leasesLost += summary.leasesLost
        total.remaining = summary.remaining
        total.nextAttemptAt = summary.nextAttemptAt
        if try await queue.counts().open == 0 { break }
        if let clock {
            let now = queue.configuration.clock.now().wall
            clock.advance(by: .milliseconds(Int64(max(0, (summary.nextAttemptAt ?? now).timeIntervalSince(now)) * 1000) + 1))
            continue
        }
        let wait = max(0.005, min(2, (summary.nextAttemptAt ?? Date()).timeIntervalSinceNow))
        try await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1))
    }
    return total
}

/// A route answering `failures` in turn for its first calls, then 200. Each failure is a
/// status with headers, or `nil` for "close the connection without answering".
func scriptFailures(_ server: TestHTTPServer, _ path: String, _ failures: [(status: Int, headers: [HeaderField])?]) {
    let calls = LockedBox(0)
    server.route(path) { request, writer in
        let call = calls.withLock { count -> Int in
            count += 1
            return count
        }
        guard call <= failures.count else {
            try await writer.respond(status: 200, body: Data("ok".utf8))
            return
        }
        guard let failure = failures[call - 1] else {
            writer.closeConnection()
            return
        }
        try await writer.respond(status: failure.status, headers: failure.headers, body: Data("{\"error\":\"status \(failure.status)\"}".utf8))
    }
}
