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
    plugins: [any Plugin] = [],
    tweak: (inout QueueConfiguration) -> Void = { _ in }
) throws -> OfflineQueue {
    var configuration = QueueConfiguration(path: path, durability: .normal, policy: policy, concurrency: concurrency)
    tweak(&configuration)
    var clientConfiguration = ClientConfiguration(baseURL: server.baseURL, timeout: .seconds(5))
    clientConfiguration.plugins = plugins
    let client = APIClient(configuration: clientConfiguration, transport: sharedTransport)
    return try OfflineQueue(configuration: configuration, client: client, monitor: monitor)
}

/// The idempotency keys the server saw, in arrival order.
func idempotencyKeys(_ server: TestHTTPServer, path: String? = nil) -> [String] {
    server.requests.filter { path == nil || $0.path == path }.compactMap { $0.values(of: "Idempotency-Key").first }
}

/// Waits until `condition` holds, checking every 10 ms, for at most `limit`.
func eventually(_ limit: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}
