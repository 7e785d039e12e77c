// `courier-bench --queue-priority [SEND_MS] [ROUNDS]`: how long an entry of higher priority,
// enqueued while a drain is busy with a backlog, waits before its send starts and before its
// delivery is recorded. The claim-ahead of the drain (entries claimed before they are sent)
// is what it waits behind. Sends go to a transport that answers 200 after SEND_MS
// milliseconds (default 100), 16 at a time, so the wait reads in rounds of sends.
import BenchSupport
import Foundation
import HTTPCore
import HTTPTypes
import OfflineQueue

/// Answers 200 after `delay`, without a network: the drain's own timing alone.
struct DelayedTransport: Transport {
    let delay: Duration

    func send(_ request: HTTPRequest, body: RequestBody?, timeout: Duration?) async throws -> TransportResponse {
        try await Task.sleep(for: delay)
        return TransportResponse(head: HTTPResponse(status: .ok), body: ByteStream(data: Data()))
    }
}

enum PriorityBench {
    static func run(arguments: [String]) async throws {
        let sendTime = Duration.milliseconds(Int(arguments.first ?? "") ?? 100)
        let rounds = Int(arguments.dropFirst().first ?? "") ?? 5
        let concurrency = 16
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-priority-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var started: [Double] = [], recorded: [Double] = []
        for round in 1...rounds {
            let client = APIClient(baseURL: URL(string: "http://127.0.0.1:9")!, transport: DelayedTransport(delay: sendTime))
            let queue = try OfflineQueue(
                configuration: QueueConfiguration(path: folder.appendingPathComponent("q-\(round).db").path, durability: .normal, concurrency: concurrency),
                client: client
            )
            // A backlog of 20 rounds of sends at priority 0.
            try await QueueBench.fill(queue, count: 20 * concurrency, url: "http://127.0.0.1:9/events")
            let events = queue.events()
            let drain = Task { try await queue.drain() }
            // Once about five rounds went out, one entry of priority 10; the times from its enqueue
            // to its send's start and to its recorded delivery.
            let watcher = Task { () throws -> (started: Duration?, recorded: Duration?) in
                var sends = 0
                var urgent: EntryID?
                var enqueuedAt = ContinuousClock.now
                var startedAfter: Duration?
                for await event in events {
                    switch event {
                    case .attemptStarted(let id, _):
                        sends += 1
                        if id == urgent { startedAfter = ContinuousClock.now - enqueuedAt }
                        // At a different point of the drain's claim cycle in each round.
                        if sends == 5 * concurrency + 13 * (round - 1) && urgent == nil {
                            enqueuedAt = ContinuousClock.now
                            urgent = try await queue.enqueue(
                                method: "POST", url: "http://127.0.0.1:9/urgent", body: .data(Data("{}".utf8)),
                                options: EnqueueOptions(priority: 10)
                            ).id
                        }
                    case .delivered(let id, _) where id == urgent:
                        return (startedAfter, ContinuousClock.now - enqueuedAt)
                    default:
                        continue
                    }
                }
                return (startedAfter, nil)
            }
            _ = try await drain.value
            // Delivered before the drain ended, or never: the stream ends with the watcher.
            watcher.cancel()
            let (startedAfter, recordedAfter) = try await watcher.value
            await queue.close()
            guard let startedAfter, let recordedAfter else { throw BenchError("round \(round): the urgent entry was not delivered during the drain") }
            started.append(seconds(startedAfter))
            recorded.append(seconds(recordedAfter))
            print("  round \(round): its send started after \(milliseconds(started.last!)) ms (\(roundsOf(started.last!, sendTime)) rounds of sends), its delivery recorded after \(milliseconds(recorded.last!)) ms")
        }
        let medianStart = Goals.median(started), medianRecorded = Goals.median(recorded)
        print("an entry of higher priority enqueued during a drain of a backlog (concurrency \(concurrency), \(milliseconds(seconds(sendTime))) ms per send): its send starts after \(milliseconds(medianStart)) ms (\(roundsOf(medianStart, sendTime)) rounds), its delivery is recorded after \(milliseconds(medianRecorded)) ms (medians of \(rounds))")
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func milliseconds(_ seconds: Double) -> String { String(format: "%.0f", seconds * 1000) }

    static func roundsOf(_ seconds: Double, _ sendTime: Duration) -> String { String(format: "%.1f", seconds / Self.seconds(sendTime)) }
}
