// `courier-bench --latency`: the offline queue's drain to a server that answers each request
// after a delay (20 ms unless `--delay-ms`), over HTTP/1.1 (plain and TLS) and HTTP/2 (TLS,
// ALPN), at the concurrencies `sync run` offers. A drain this far from its server is bound by
// round trips: its ceiling is concurrency / latency (for HTTP/1.1, the connections per host
// bound the concurrency too). For each protocol and concurrency: the drain's entries/s, that
// ceiling, the fraction of it reached, this process's CPU per entry, and raw AsyncHTTPClient
// POSTing the same requests at the same concurrency through the same client configuration.
//
//   courier-bench --latency [--count 10000] [--delay-ms 20] [--concurrency 8,16,32,64,100,128]
//                           [--protocols h2,h1tls,h1] [--connections N]
//
// `--connections N`: HTTP/1.1 connections per host (default: the concurrency, so that the pool
// is not the limit; `sync run` sets min(concurrency, 16)). HTTP/2 opens one connection and
// multiplexes (the server allows 256 streams).
import AsyncHTTPClient
import AsyncHTTPClientTransport
import BenchSupport
import Foundation
import HTTPCore
import OfflineQueue

enum LatencyBench {
    /// How the server is reached.
    enum Wire: String, CaseIterable {
        case h2, h1tls, h1

        var label: String {
            switch self {
            case .h2: "HTTP/2 (TLS)"
            case .h1tls: "HTTP/1.1 (TLS)"
            case .h1: "HTTP/1.1 (plain)"
            }
        }

        /// bench-server's options for this wire (besides the delay).
        var serverArguments: [String] {
            switch self {
            case .h2: ["--tls"]
            case .h1tls: ["--tls", "--http1"]
            case .h1: []
            }
        }
    }

    static func run(arguments: [String]) async throws {
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        let count = option("--count").flatMap(Int.init) ?? 10_000
        let delay = option("--delay-ms").flatMap(Int.init) ?? 20
        let concurrencies = (option("--concurrency") ?? "8,16,32,64,100,128").split(separator: ",").compactMap { Int($0) }
        let wires = try (option("--protocols") ?? "h2,h1tls,h1").split(separator: ",").map { name in
            guard let wire = Wire(rawValue: String(name)) else { throw BenchError("unknown protocol \(name): h2, h1tls or h1") }
            return wire
        }
        let connectionsOption = option("--connections").flatMap(Int.init)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-latency-bench-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        print("courier-bench --latency: \(count) entries drained per row to bench-server answering after \(delay) ms; \(ProcessInfo.processInfo.activeProcessorCount) cores; load \(Measured.loadAverage())")
        print("| protocol | concurrency | connections | drain entries/s | ceiling/s | fraction | CPU µs/entry | switches/entry | raw POSTs/s | raw fraction | raw CPU µs/req | raw switches/req | idle |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for wire in wires {
            let server = try LatencyServer.start(arguments: wire.serverArguments + ["--delay-ms", String(delay)])
            defer { server.stop() }
            let scheme = wire == .h1 ? "http" : "https"
            let base = "\(scheme)://127.0.0.1:\(server.port)"
            for concurrency in concurrencies {
                let connections = wire == .h2 ? 1 : (connectionsOption ?? concurrency)
                var configuration = AsyncHTTPClientTransport.Configuration(maximumConnectionsPerHost: wire == .h2 ? 8 : connections)
                if let certificate = server.certificate { configuration.trustRootCertificates(inPEMFile: certificate) }
                let ceiling = Double(min(concurrency, wire == .h2 ? 256 : connections)) * 1_000 / Double(delay)

                // Raw AsyncHTTPClient, same configuration; warmed (connections opened) first.
                let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration.clientConfiguration)
                let version = try await negotiated(url: base + "/events", client: httpClient)
                guard version == (wire == .h2 ? "HTTP/2.0" : "HTTP/1.1") else { throw BenchError("\(wire.label): the server answered over \(version)") }
                try await concurrently(concurrency * 4, tasks: concurrency) { index in try await QueuePayload.rawPOST(index, url: base + "/events", client: httpClient) }
                // BENCH_LATENCY_SIDE=drain or raw: only that side measured, for strace and perf (the
                // raw client is still warmed, the queues still filled); the other side's cells read 0.
                let side = ProcessInfo.processInfo.environment["BENCH_LATENCY_SIDE"]
                let rawSpin = ProcessInfo.processInfo.environment["BENCH_LATENCY_RAW_SPIN_US"].flatMap { Int($0) } ?? 0
                let raw = side == "drain" ? Measured(rate: 0, cpu: 0, idle: 0) : try await Measured.of(count: count) {
                    let start = ContinuousClock.now
                    try await concurrently(count, tasks: concurrency) { index in
                        try await QueuePayload.rawPOST(index, url: base + "/events", client: httpClient)
                        // BENCH_LATENCY_RAW_SPIN_US=N: N µs of pure CPU on the calling task after each
                        // raw POST, to see what that much work of the client's own does to the rate.
                        if rawSpin > 0 {
                            let until = ContinuousClock.now + .microseconds(rawSpin)
                            while ContinuousClock.now < until {}
                        }
                    }
                    return Bench.rate(count, ContinuousClock.now - start)
                }
                try await httpClient.shutdown()

                // The drain: an SQLite queue of `count` entries (filled, not timed) through
                // APIClient over AsyncHTTPClientTransport(configuration:).
                let transport = AsyncHTTPClientTransport(configuration: configuration)
                let client = APIClient(configuration: ClientConfiguration(baseURL: URL(string: base)!, timeout: .seconds(30)), transport: transport)
                let warm = try OfflineQueue(configuration: QueueConfiguration(path: folder.appendingPathComponent("warm-\(wire)-\(concurrency).db").path, durability: .normal, concurrency: concurrency), client: client)
                try await QueueBench.fill(warm, count: concurrency * 4, url: base + "/events")
                _ = try await warm.drain()
                await warm.close()
                let queue = try OfflineQueue(configuration: QueueConfiguration(path: folder.appendingPathComponent("drain-\(wire)-\(concurrency).db").path, durability: .normal, concurrency: concurrency), client: client)
                try await QueueBench.fill(queue, count: count, url: base + "/events")
                let drained = side == "raw" ? Measured(rate: 0, cpu: 0, idle: 0) : try await Measured.of(count: count) {
                    let start = ContinuousClock.now
                    let summary = try await queue.drain()
                    guard summary.delivered == count else { throw BenchError("drained \(summary.delivered) of \(count): \(summary)") }
                    return Bench.rate(count, ContinuousClock.now - start)
                }
                await queue.close()
                try await transport.shutdown()

                let cells = [
                    wire.label, String(concurrency), wire == .h2 ? "1 (\(concurrency) streams)" : String(connections),
                    Bench.format(drained.rate), Bench.format(ceiling), String(format: "%.2f", drained.rate / ceiling), String(format: "%.0f", drained.cpu),
                    String(format: "%.2f", drained.switches),
                    Bench.format(raw.rate), String(format: "%.2f", raw.rate / ceiling), String(format: "%.0f", raw.cpu),
                    String(format: "%.2f", raw.switches),
                    String(format: "%.0f %%", drained.idle * 100),
                ]
                print("| " + cells.joined(separator: " | ") + " |")
            }
        }
    }

    /// The HTTP version the server answers `url` with, through `client`.
    static func negotiated(url: String, client: HTTPClient) async throws -> String {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.body = .bytes(.init(string: "{}"))
        let response = try await client.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return "\(response.version)"
    }
}

/// `bench-server` with options, as a child process: its port (first line) and, with `--tls`,
/// the path of its self-signed certificate (second line).
struct LatencyServer {
    let process: Process
    let input: Pipe
    let port: Int
    let certificate: String?

    static func start(arguments: [String]) throws -> LatencyServer {
        let executable = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("bench-server")
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        func line() -> String {
            var line = Data()
            while true {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                line.append(byte)
            }
            return String(decoding: line, as: UTF8.self)
        }
        guard let port = Int(line()), port > 0 else {
            throw BenchError("bench-server did not report a port (swift build -c release --product bench-server)")
        }
        let certificate = arguments.contains("--tls") ? line() : nil
        return LatencyServer(process: process, input: input, port: port, certificate: certificate)
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
