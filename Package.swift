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
        .library(name: "AsyncHTTPClientTransport", targets: ["AsyncHTTPClientTransport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        .target(
            name: "HTTPCore",
            dependencies: [.product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Modules/HTTPCore",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HTTPCoreTests",
            dependencies: ["HTTPCore"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AsyncHTTPClientTransport",
            dependencies: [
                "HTTPCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
            ],
            path: "Modules/AsyncHTTPClientTransport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AsyncHTTPClientTransportTests",
            dependencies: [
                "AsyncHTTPClientTransport",
                "HTTPCore",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        // Shared fixtures for tests and examples: a regular library target (not a test target)
        // so test targets and example executables can both depend on it. It is not a product.
        .target(
            name: "TestSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TransportConformanceTests",
            dependencies: [
                "HTTPCore",
                "AsyncHTTPClientTransport",
                "TestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/TransportConformanceTests",
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
