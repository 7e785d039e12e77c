// swift-tools-version:6.1
import PackageDescription

/// Courier's benchmarks: a separate package so the root package's users never build them.
/// `courier-bench` measures Courier against raw AsyncHTTPClient; `bench-server` is the
/// loopback server it starts as a child process.
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
    ],
    targets: [
        .executableTarget(
            name: "courier-bench",
            dependencies: [
                .product(name: "HTTPCore", package: "courier"),
                .product(name: "AsyncHTTPClientTransport", package: "courier"),
                .product(name: "Plugins", package: "courier"),
                .product(name: "Multipart", package: "courier"),
                .product(name: "OfflineQueue", package: "courier"),
                .product(name: "OfflineQueuePostgres", package: "courier"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Sources/courier-bench"
        ),
        .executableTarget(
            name: "bench-server",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/bench-server"
        ),
    ],
    swiftLanguageModes: [.v6]
)
