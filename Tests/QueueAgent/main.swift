// A queue drainer in its own process, for tests that kill it (SIGKILL) or run several at once
// on one file. Not a product.
//
//     queue-agent DB_PATH_OR_URL [--concurrency N] [--lease-ms N] [--limit-seconds N]
//
// Drains until no entry is open (pending, blocked or in flight), sleeping until the next due time
// between drains, for at most `--limit-seconds` (default 60). Prints one summary line:
// `delivered=N failed=N dead=N lost=N open=N drains=N …` with the queue's last counts, and the
// last failure of an attempt on standard error. Exit 0 when nothing is open, 75 otherwise.
//
//     queue-agent seal-roundtrip --db PATH --keyring FILE --url URL --size BYTES [--limit-seconds N] [--sealing on|off]
//
// Enqueues one generated body of BYTES into a sealing queue, sends it, and prints one JSON line
// with the result and this process's peak memory (SealRoundtrip.swift).
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import OfflineQueue
import OfflineQueuePostgres

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: queue-agent DB_PATH [--concurrency N] [--lease-ms N] [--limit-seconds N]\n".utf8))
    exit(64)
}
if arguments[1] == "seal-roundtrip" {
    exit(await SealRoundtrip.run(Array(arguments.dropFirst(2))))
}

func option(_ name: String, default value: Int) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let number = Int(arguments[index + 1]) else { return value }
    return number
}

let path = arguments[1]
let concurrency = option("--concurrency", default: 16)
let leaseMilliseconds = option("--lease-ms", default: 60_000)
let limit = Duration.seconds(option("--limit-seconds", default: 60))

var policy = DeliveryPolicy(backoff: Backoff(base: .milliseconds(20), cap: .milliseconds(200)), maxAttempts: 50)
policy.leaseDuration = .milliseconds(leaseMilliseconds)
let configuration = QueueConfiguration(path: path, createIfMissing: false, durability: .normal, policy: policy, concurrency: concurrency)
let transport = AsyncHTTPClientTransport()
// A request's deadline guards against a hang only: a loaded test machine may take seconds.
let client = APIClient(configuration: ClientConfiguration(baseURL: URL(string: "http://127.0.0.1")!, timeout: .seconds(300)), transport: transport)

do {
    let opened = ContinuousClock.now
    let queue = PostgresLocation.isPostgresURL(configuration.path)
        ? try await OfflineQueue.open(configuration: configuration, client: client)
        : try OfflineQueue(configuration: configuration, client: client)
    let openTook = ContinuousClock.now - opened
    // The last attempt that failed, for the summary: what a test prints when this agent fails.
    let events = queue.events(bufferingPolicy: .bufferingNewest(64))
    let lastFailure = Task { () -> String? in
        var last: String?
        for await event in events {
            switch event {
            case .willRetry(let id, _, let error): last = "entry \(id): \(error)"
            case .deadLettered(let id, _, let error): last = "entry \(id) dead: \(error)"
            default: continue
            }
        }
        return last
    }
    var total = DrainSummary()
    let deadline = ContinuousClock.now + limit
    var counts = QueueCounts()
    var drains = 0
    while ContinuousClock.now < deadline {
        let summary = try await queue.drain()
        drains += 1
        total.delivered += summary.delivered
        total.failed += summary.failed
        total.dead += summary.dead
        total.leasesLost += summary.leasesLost
        total.waitingForNetwork += summary.waitingForNetwork
        counts = try await queue.counts()
        if counts.open == 0 { break }
        // Entries in flight elsewhere, or backing off: wait for the next due time, briefly.
        let wait = max(0.01, min(0.2, (counts.nextAttemptAt ?? Date()).timeIntervalSinceNow))
        try await Task.sleep(for: .milliseconds(Int(wait * 1000)))
    }
    print(
        "delivered=\(total.delivered) failed=\(total.failed) dead=\(total.dead) lost=\(total.leasesLost) open=\(counts.open)",
        "drains=\(drains) waiting-network=\(total.waitingForNetwork) open-took=\(openTook)",
        "pending=\(counts.pending) due=\(counts.due) inflight=\(counts.inflight) inflight-here=\(counts.inflightHere)",
        "next-attempt=\(counts.nextAttemptAt.map { "\($0)" } ?? "none")"
    )
    lastFailure.cancel()
    if let failure = await lastFailure.value { FileHandle.standardError.write(Data("queue-agent: last failed attempt: \(failure)\n".utf8)) }
    let open = counts.open
    try? await transport.shutdown()
    exit(open == 0 ? 0 : 75)
} catch {
    FileHandle.standardError.write(Data("queue-agent: \(error)\n".utf8))
    exit(74)
}
