// The sides of `courier-bench --sealed`: the queue with sealing on (`.on(keyring)`) against
// the same queue with sealing off, in the same process, with the A/A control of `--goals` (the
// unsealed side again, in a child). Ratios.swift runs them; RatioScenario.swift names them.
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
import OfflineQueue
import QueueEncryption

enum SealingBench {
    /// One in-memory keyring for every sealed queue of the process.
    static let keyring = Keyring.generate()

    static func configuration(path: String, durability: QueueDurability, concurrency: Int = 8, sealed: Bool) -> QueueConfiguration {
        var configuration = QueueConfiguration(path: path, durability: durability, concurrency: concurrency)
        if ProcessInfo.processInfo.environment["BENCH_NO_METRICS"] == "1" { configuration.metrics.isEnabled = false }
        if sealed { configuration.sealing = .on(keyring) }
        return configuration
    }

    /// `count` durable enqueues (`.full`) of 1 KiB bodies, one at a time, into a new queue at
    /// `path`; opening the queue is not measured.
    static func enqueues(count: Int, path: String, sealed: Bool) async throws -> Measured {
        let queue = try OfflineQueue(
            configuration: configuration(path: path, durability: .full, sealed: sealed),
            client: APIClient(baseURL: URL(string: "http://127.0.0.1")!, transport: AsyncHTTPClientTransport())
        )
        // The first enqueue of a sealed queue checks its keyring (once): not measured.
        _ = try await queue.enqueue(method: "POST", url: QueuePayload.url, headers: QueuePayload.headers, body: .data(QueuePayload.kibibyteBody(-1)))
        let measured = try await Measured.of(count: count) {
            let start = ContinuousClock.now
            for index in 0..<count {
                _ = try await queue.enqueue(method: "POST", url: QueuePayload.url, headers: QueuePayload.headers, body: .data(QueuePayload.kibibyteBody(index)))
            }
            return Bench.rate(count, ContinuousClock.now - start)
        }
        await queue.close()
        return measured
    }

    /// Fills a new queue with `count` of the drain's entries (not measured), then measures one
    /// drain at concurrency 16, `.normal`, as the unsealed drain's figure.
    static func drain(count: Int, url: String, client: APIClient, path: String, sealed: Bool) async throws -> Measured {
        let queue = try OfflineQueue(configuration: configuration(path: path, durability: .normal, concurrency: 16, sealed: sealed), client: client)
        try await QueueBench.fill(queue, count: count, url: url)
        let measured = try await Measured.of(count: count) {
            let start = ContinuousClock.now
            let summary = try await queue.drain()
            guard summary.delivered == count else { throw BenchError("drained \(summary.delivered) of \(count): \(summary)") }
            return Bench.rate(count, ContinuousClock.now - start)
        }
        await queue.close()
        return measured
    }

    /// `count` bodies of 10 MiB enqueued one at a time (each written to a body file and
    /// synced), then drained to the loopback server 4 at a time: bodies per second of the two
    /// together.
    static func largeBodies(count: Int, url: String, client: APIClient, path: String, sealed: Bool) async throws -> Measured {
        let queue = try OfflineQueue(configuration: configuration(path: path, durability: .normal, concurrency: 4, sealed: sealed), client: client)
        _ = try await queue.enqueue(method: "POST", url: url, headers: QueuePayload.headers, body: .data(QueuePayload.body(0)))
        _ = try await queue.drain()
        let measured = try await Measured.of(count: count) {
            let start = ContinuousClock.now
            for _ in 0..<count {
                _ = try await queue.enqueue(method: "POST", url: url, headers: QueuePayload.headers, body: .data(QueuePayload.largeBody))
            }
            let summary = try await queue.drain()
            guard summary.delivered == count else { throw BenchError("drained \(summary.delivered) of \(count): \(summary)") }
            return Bench.rate(count, ContinuousClock.now - start)
        }
        await queue.close()
        return measured
    }
}
