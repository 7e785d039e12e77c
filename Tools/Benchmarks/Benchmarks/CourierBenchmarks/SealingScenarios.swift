import BenchSupport
import Benchmark
import Foundation
import OfflineQueue
import QueueEncryption

/// Sealing at rest (`QueueConfiguration.sealing = .on(keyring)`), each sealed scenario beside
/// the same scenario with sealing off: what sealing adds to a durable enqueue of a 1 KiB body,
/// to a drained entry, and to a 10 MiB body enqueued and drained. The sealed side's
/// `drain-SQLite` twin is `drain-SQLite.Courier` itself (the same entries, the same queue).
enum SealingScenarios {
    /// One in-memory keyring for every sealed queue of the process.
    static let keyring = Keyring.generate()

    /// A 10 MiB body costs what ~10,000 small entries do: one per iteration, and tolerances
    /// of their own. Allocations per body move by a few between iterations (3,456–3,476
    /// unsealed, 5,965 sealed, whose verified plaintext is kept for the send): +50 fails.
    /// Write system calls are mostly the socket's (~160 writes of 64 KiB, and event-loop
    /// wake-ups that move with the load: 182–337 between runs), the same sealed or not: +100
    /// per body only catches a blow-up, such as one write per chunk more.
    static var largeBody: Benchmark.Configuration {
        Measure.configuration(allocationsPerOperation: 50, writeSyscallsPerOperation: 100, scaling: .one)
    }

    static func register() {
        for sealed in [false, true] {
            Benchmark(sealed ? "durable-enqueue.Courier-sealed" : "durable-enqueue.Courier-1KiB") { benchmark, queue in
                try await Measure.run(benchmark) {
                    for index in benchmark.scaledIterations {
                        _ = try await queue.enqueue(method: "POST", url: QueuePayload.url, headers: QueuePayload.headers, body: .data(QueuePayload.kibibyteBody(index)))
                    }
                }
            } setup: {
                try OfflineQueue(
                    configuration: configuration(path: Folder.shared.path("enqueue-1k-\(sealed).db"), durability: .full, sealed: sealed),
                    client: Loopback.client
                )
            } teardown: {
                Folder.shared.remove("enqueue-1k-\(sealed).db")
            }

            Benchmark(sealed ? "large-body.Courier-sealed" : "large-body.Courier", configuration: largeBody) { benchmark, queue in
                let url = Loopback.baseURL.appendingPathComponent("events").absoluteString
                try await Measure.run(benchmark) {
                    for _ in benchmark.scaledIterations {
                        _ = try await queue.enqueue(method: "POST", url: url, headers: QueuePayload.headers, body: .data(QueuePayload.largeBody))
                        let summary = try await queue.drain()
                        guard summary.delivered == 1 else { throw BenchError("drained \(summary.delivered) of 1: \(summary)") }
                    }
                }
            } setup: {
                try OfflineQueue(
                    configuration: configuration(path: Folder.shared.path("large-\(sealed).db"), durability: .normal, sealed: sealed),
                    client: Loopback.client
                )
            } teardown: {
                Folder.shared.remove("large-\(sealed).db")
            }
        }
        Benchmark("drain-SQLite.Courier-sealed") { benchmark, queue in
            try await QueueScenarios.fillAndDrain(benchmark, queue)
        } setup: {
            try OfflineQueue(
                configuration: configuration(path: Folder.shared.path("drain-sealed.db"), durability: .normal, concurrency: 16, sealed: true),
                client: Loopback.client
            )
        } teardown: {
            Folder.shared.remove("drain-sealed.db")
        }
    }

    static func configuration(path: String, durability: QueueDurability, concurrency: Int = 8, sealed: Bool) -> QueueConfiguration {
        var configuration = QueueConfiguration(path: path, durability: durability, concurrency: concurrency)
        if sealed { configuration.sealing = .on(keyring) }
        return configuration
    }
}
