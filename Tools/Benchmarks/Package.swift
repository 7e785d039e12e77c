// swift-tools-version:6.1
import PackageDescription

/// Courier's benchmarks: a separate package so the root package's users never build them.
/// `courier-bench` measures Courier against raw AsyncHTTPClient; `bench-server` is the
/// loopback server it starts as a child process. `CourierBenchmarks` (package-benchmark,
/// `swift package benchmark`) counts allocations and system calls per operation, each Courier
/// scenario beside its raw twin, against the thresholds committed in `Thresholds/`.
/// What both benchmarks measure: Courier's client and queue modules, and the raw libraries
/// they are compared with.
let scenarioDependencies: [Target.Dependency] = [
    "BenchSupport",
    .product(name: "HTTPCore", package: "courier"),
    .product(name: "AsyncHTTPClientTransport", package: "courier"),
    .product(name: "Plugins", package: "courier"),
    .product(name: "OfflineQueue", package: "courier"),
    .product(name: "OfflineQueuePostgres", package: "courier"),
    .product(name: "QueueEncryption", package: "courier"),
    .product(name: "PostgresNIO", package: "postgres-nio"),
    .product(name: "GRDBSQLite", package: "GRDB.swift"),
    .product(name: "Logging", package: "swift-log"),
    .product(name: "AsyncHTTPClient", package: "async-http-client"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOFoundationCompat", package: "swift-nio"),
    .product(name: "HTTPTypes", package: "swift-http-types"),
]

let package = Package(
    name: "courier-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        // `name:` keeps product references stable whatever the checkout directory is called.
        .package(name: "courier", path: "../.."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // bench-server's TLS and HTTP/2 (the latency benchmark); resolved already through AsyncHTTPClient.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // The malloc interposer counts allocations with no system package (jemalloc is the
        // backend only before Swift 6.3).
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "courier-bench",
            // `--console`: the operator console served on loopback over a 1,000,000-entry queue.
            dependencies: scenarioDependencies + [
                .product(name: "Multipart", package: "courier"),
                .product(name: "QueueConsole", package: "courier"),
                // `--growth`: the measured workload its smoke test shares (GrowthWorkload).
                .product(name: "CourierTesting", package: "courier"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Sources/courier-bench"
        ),
        .executableTarget(
            name: "bench-server",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
            path: "Sources/bench-server"
        ),
        // What both benchmarks share: the page model and the raw calls, the queue's request and
        // its raw POST, the minimal raw SQLite insert, the plugins pair's stack, the server
        // process, concurrent callers.
        .target(
            name: "BenchSupport",
            dependencies: [
                .product(name: "HTTPCore", package: "courier"),
                .product(name: "Plugins", package: "courier"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/BenchSupport"
        ),
        // Counts this process's system calls (all threads) with a perf tracepoint counter.
        .target(name: "CSyscallCount", path: "Sources/CSyscallCount"),
        // package-benchmark looks for benchmark targets under `Benchmarks/`.
        .executableTarget(
            name: "CourierBenchmarks",
            dependencies: scenarioDependencies + [
                "CSyscallCount",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CourierBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
