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
        .library(name: "Reachability", targets: ["Reachability"]),
        .executable(name: "reachability-bench", targets: ["reachability-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
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
            name: "CNetlink",
            path: "Modules/CNetlink"
        ),
        .target(
            name: "Reachability",
            dependencies: ["HTTPCore", "CNetlink"],
            path: "Modules/Reachability",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReachabilityTests",
            dependencies: ["Reachability", "HTTPCore", "CNetlink", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "reachability-bench",
            dependencies: ["Reachability", "CNetlink"],
            path: "Tools/reachability-bench",
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
