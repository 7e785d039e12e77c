// `courier-bench --multipart [MiB]`: a multipart upload of one sparse file through APIClient +
// AsyncHTTPClientTransport versus the same file sent as a raw streamed body with
// AsyncHTTPClient, against the loopback bench server; throughput and peak resident memory.
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
import Multipart
import NIOCore
import NIOFoundationCompat

enum MultipartBench {
    static func run(megabytes: Int) async throws {
        let server = try ServerProcess.start()
        let size = megabytes << 20
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-\(UUID().uuidString).bin")
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else { throw BenchError("cannot create \(file.path)") }
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()

        let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        let client = APIClient(
            configuration: ClientConfiguration(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: .seconds(600)),
            transport: AsyncHTTPClientTransport(client: httpClient)
        )
        print("courier-bench --multipart: \(megabytes) MiB sparse file, server pid \(server.process.processIdentifier)")

        var rawRates: [Double] = []
        var courierRates: [Double] = []
        var rawPeak = 0
        var courierPeak = 0
        for round in 0...4 {
            let (rawSeconds, rawMemory) = try await measure {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/upload")
                request.method = .POST
                request.body = .stream(FileChunks(url: file), length: .known(Int64(size)))
                let response = try await httpClient.execute(request, timeout: .seconds(600))
                _ = try await response.body.collect(upTo: 1 << 20)
            }
            let (courierSeconds, courierMemory) = try await measure {
                var form = MultipartForm()
                form.append("bench", name: "kind")
                try form.append(file: file, name: "payload")
                _ = try await client.data(Request<Data>.post("/upload", body: .multipart(form)))
            }
            if round == 0 { continue }  // warm-up: connections, page cache
            rawRates.append(Double(size) / rawSeconds / 1_048_576)
            courierRates.append(Double(size) / courierSeconds / 1_048_576)
            rawPeak = max(rawPeak, rawMemory)
            courierPeak = max(courierPeak, courierMemory)
            print("  round \(round): raw streamed body \(String(format: "%.0f", rawRates.last!)) MiB/s, multipart \(String(format: "%.0f", courierRates.last!)) MiB/s")
        }
        let raw = median(rawRates)
        let courier = median(courierRates)
        print("medians of 4 rounds after a warm-up:")
        print("raw AsyncHTTPClient streamed body: \(String(format: "%.0f", raw)) MiB/s, peak resident \(rawPeak >> 20) MiB")
        print("APIClient multipart upload: \(String(format: "%.0f", courier)) MiB/s, peak resident \(courierPeak >> 20) MiB")
        print("ratio multipart / raw: \(String(format: "%.3f", courier / raw))")
        try await httpClient.shutdown()
        server.stop()
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count.isMultiple(of: 2) ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
    }

    /// Wall seconds of `body`, and the process's peak resident memory during it.
    static func measure(_ body: () async throws -> Void) async throws -> (Double, Int) {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, peakResident())
    }

    static func peakResident() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kilobytes * 1024
    }
}

/// A file read in 64 KiB `ByteBuffer`s: the raw baseline's streamed body.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let url: URL

    func makeAsyncIterator() -> Iterator { Iterator(handle: try? FileHandle(forReadingFrom: url)) }

    struct Iterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        mutating func next() async throws -> ByteBuffer? {
            guard let handle, let data = try handle.read(upToCount: 64 * 1024), !data.isEmpty else {
                try? handle?.close()
                return nil
            }
            return ByteBuffer(data: data)
        }
    }
}
