// `queue-agent seal-roundtrip`: one large body through a sealing queue, with this process's
// peak memory. Used by SealingMemoryTests (peak RSS for 1 GiB against 100 MiB).
//
//     queue-agent seal-roundtrip --db PATH --keyring FILE --url URL --size BYTES [--limit-seconds N] [--sealing on|off]
//
// Creates (or opens) the SQLite queue at PATH with sealing on under the keyring file FILE,
// enqueues one PUT to URL whose body is a stream of BYTES bytes of ``SealRoundtrip/piece(_:base:)``
// (made one MiB at a time, never held whole), drains it (one attempt, no retry), and prints
// one JSON line:
//
//     {"size":…,"delivered":1,"failed":0,"dead":0,"open":0,"lastStatus":200,"lastError":null,
//      "storedBytes":…,"enqueueSeconds":…,"drainSeconds":…,"peakKiB":…,
//      "hwmOpenedKiB":…,"hwmEnqueuedKiB":…,"hwmDrainedKiB":…,"maxRSSKiB":…}
//
// `peakKiB` is this process's peak resident size after the drain: VmHWM from /proc/self/status
// where there is one, else `getrusage(RUSAGE_SELF).ru_maxrss`. The `hwm…KiB` values are VmHWM
// after opening the queue, after the enqueue and after the drain (0 without /proc);
// `maxRSSKiB` is ru_maxrss, for information only: on Linux it also counts the memory image this
// process replaced at exec, and a child started with posix_spawn (TestSupport's ChildProcess)
// replaced its parent's, so it reports the test process's peak when that is larger.
// `--sealing off` stores the body in clear (the keyring is still loaded), to compare. Exit 0
// when the entry was delivered, 75 when it was not, 74 on an error (printed to standard error).
import AsyncHTTPClientTransport
import Foundation
import HTTPCore
import OfflineQueue
import OfflineQueuePostgres
import QueueEncryption
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum SealRoundtrip {
    /// Bytes per generated piece.
    static let pieceSize = 1024 * 1024

    /// Piece `index` of the body: byte `i` is `i * 13 + 7` (mod 256), its first eight bytes
    /// replaced by `index` as a big-endian UInt64, so pieces differ and their order shows in
    /// the checksum. SealingMemoryTests computes the same bytes.
    static func piece(_ index: Int, base: Data) -> Data {
        var piece = base
        withUnsafeBytes(of: UInt64(index).bigEndian) { piece.replaceSubrange(0..<8, with: $0) }
        return piece
    }

    static let basePiece = Data((0..<pieceSize).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) })

    struct Report: Encodable {
        var size: Int
        var delivered: Int
        var failed: Int
        var dead: Int
        var open: Int
        var lastStatus: Int?
        var lastError: String?
        var storedBytes: Int?
        var enqueueSeconds: Double
        var drainSeconds: Double
        var peakKiB: Int
        var hwmOpenedKiB: Int
        var hwmEnqueuedKiB: Int
        var hwmDrainedKiB: Int
        var maxRSSKiB: Int
    }

    /// Runs the mode with the arguments after `seal-roundtrip`; returns the exit status.
    static func run(_ arguments: [String]) async -> Int32 {
        func value(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        guard let path = value("--db"), let keyringPath = value("--keyring"), let url = value("--url"),
              let size = value("--size").flatMap(Int.init), size >= 0 else {
            FileHandle.standardError.write(Data("usage: queue-agent seal-roundtrip --db PATH --keyring FILE --url URL --size BYTES [--limit-seconds N] [--sealing on|off]\n".utf8))
            return 64
        }
        let limit = value("--limit-seconds").flatMap(Int.init) ?? 600

        let transport = AsyncHTTPClientTransport()
        do {
            let keyring = try Keyring.load(path: keyringPath)
            var configuration = QueueConfiguration(
                path: path, createIfMissing: true, durability: .normal,
                policy: DeliveryPolicy(maxAttempts: 1), concurrency: 1
            )
            configuration.sealing = value("--sealing") == "off" ? QueueSealing(mode: .off, keyring: keyring) : .on(keyring)
            let client = APIClient(
                configuration: ClientConfiguration(baseURL: URL(string: "http://127.0.0.1")!, timeout: .seconds(Int64(limit))),
                transport: transport
            )
            let queue = PostgresLocation.isPostgresURL(configuration.path)
                ? try await OfflineQueue.open(configuration: configuration, client: client)
                : try OfflineQueue(configuration: configuration, client: client)
            let hwmOpened = highWaterMarkKiB()

            let clock = ContinuousClock()
            let enqueueStart = clock.now
            let body = RequestBody.stream(length: size) {
                let produced = Counter()
                return ByteStream(next: {
                    produced.next(size: size)
                })
            }
            let ticket = try await queue.enqueue(method: "PUT", url: url, body: body)
            let enqueueTime = clock.now - enqueueStart
            let hwmEnqueued = highWaterMarkKiB()

            let drainStart = clock.now
            let summary = try await queue.drain()
            let drainTime = clock.now - drainStart
            let hwmDrained = highWaterMarkKiB()
            let maxRSS = maxResidentKiB()

            let entry = try await queue.entry(ticket.id)
            let counts = try await queue.counts()
            await queue.close()
            let report = Report(
                size: size, delivered: summary.delivered, failed: summary.failed, dead: summary.dead, open: counts.open,
                lastStatus: entry?.lastStatus, lastError: entry?.lastError, storedBytes: entry?.body?.length,
                enqueueSeconds: enqueueTime.seconds, drainSeconds: drainTime.seconds, peakKiB: hwmDrained > 0 ? hwmDrained : maxRSS,
                hwmOpenedKiB: hwmOpened, hwmEnqueuedKiB: hwmEnqueued, hwmDrainedKiB: hwmDrained, maxRSSKiB: maxRSS
            )
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            try? await transport.shutdown()
            return summary.delivered == 1 ? 0 : 75
        } catch {
            FileHandle.standardError.write(Data("queue-agent seal-roundtrip: \(error)\n".utf8))
            try? await transport.shutdown()
            return 74
        }
    }

    /// The generated body's pieces, counted; one per attempt (the factory makes a new one).
    final class Counter: @unchecked Sendable {
        // Only called serially by the stream's one consumer (ByteStream(next:)).
        private var produced = 0
        private var index = 0

        func next(size: Int) -> Data? {
            guard produced < size else { return nil }
            var piece = SealRoundtrip.piece(index, base: SealRoundtrip.basePiece)
            let count = min(SealRoundtrip.pieceSize, size - produced)
            if count < piece.count { piece = piece.prefix(count) }
            produced += count
            index += 1
            return piece
        }
    }

    /// `ru_maxrss`: KiB on Linux, bytes on Darwin (converted).
    static func maxResidentKiB() -> Int {
        var usage = rusage()
        #if canImport(Darwin)
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
        return Int(usage.ru_maxrss) / 1024
        #else
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
        return Int(usage.ru_maxrss)
        #endif
    }

    /// VmHWM from /proc/self/status in KiB (the value is tab-separated from its name); 0
    /// without /proc.
    static func highWaterMarkKiB() -> Int {
        let fd = open("/proc/self/status", O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst("VmHWM:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
        }
        return 0
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
