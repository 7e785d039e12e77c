// swift-tools-version:6.1
import PackageDescription

/// Settings every Courier target shares: Swift 6 mode plus the upcoming features that keep
/// dependencies explicit and existentials visible.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "courier",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "HTTPCore", targets: ["HTTPCore"]),
        .library(name: "Plugins", targets: ["Plugins"]),
        .library(name: "Multipart", targets: ["Multipart"]),
        .library(name: "Encoding", targets: ["Encoding"]),
        .library(name: "ErrorMapping", targets: ["ErrorMapping"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "HTTPCore",
            dependencies: [.product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Modules/HTTPCore",
            swiftSettings: strictSettings
        ),
        .target(
            name: "Plugins",
            dependencies: [
                "HTTPCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Modules/Plugins",
            swiftSettings: strictSettings
        ),
        .target(
            name: "Multipart",
            dependencies: ["HTTPCore", "Encoding", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Modules/Multipart",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "MultipartTests",
            dependencies: ["Multipart"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PluginsTests",
            dependencies: [
                "Plugins",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HTTPCoreTests",
            dependencies: ["HTTPCore"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Encoding",
            dependencies: ["HTTPCore", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Modules/Encoding",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EncodingTests",
            dependencies: ["Encoding", "HTTPCore", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ErrorMapping",
            dependencies: ["HTTPCore", .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Modules/ErrorMapping",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ErrorMappingTests",
            dependencies: ["ErrorMapping", "HTTPCore", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
