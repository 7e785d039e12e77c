// swift-tools-version:6.1
import PackageDescription

/// Settings every Courier target shares: Swift 6 mode plus the upcoming features that keep
/// dependencies explicit and existentials visible.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let httpTypes = Target.Dependency.product(name: "HTTPTypes", package: "swift-http-types")
let openAPIRuntime = Target.Dependency.product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")

/// A library module under `Modules/NAME`.
func module(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .target(name: name, dependencies: dependencies, path: "Modules/\(name)", swiftSettings: strictSettings)
}

/// A test target under `Tests/NAME`; `exclude` names files in it that are not sources.
func tests(_ name: String, _ dependencies: [Target.Dependency], exclude: [String] = []) -> Target {
    .testTarget(name: name, dependencies: dependencies, exclude: exclude, swiftSettings: strictSettings)
}

let package = Package(
    name: "courier",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "HTTPCore", targets: ["HTTPCore"]),
        .library(name: "AsyncHTTPClientTransport", targets: ["AsyncHTTPClientTransport"]),
        .library(name: "Encoding", targets: ["Encoding"]),
        .library(name: "ErrorMapping", targets: ["ErrorMapping"]),
        .library(name: "Plugins", targets: ["Plugins"]),
        .library(name: "Multipart", targets: ["Multipart"]),
        .library(name: "Reachability", targets: ["Reachability"]),
        .library(name: "OfflineQueueCore", targets: ["OfflineQueueCore"]),
        .library(name: "OfflineQueue", targets: ["OfflineQueue"]),
        .library(name: "OfflineQueuePostgres", targets: ["OfflineQueuePostgres"]),
        .library(name: "QueueEncryption", targets: ["QueueEncryption"]),
        .library(name: "QueueSystemd", targets: ["QueueSystemd"]),
        .library(name: "CombineAdapters", targets: ["CombineAdapters"]),
        .library(name: "OpenAPITransport", targets: ["OpenAPITransport"]),
        .library(name: "OpenAPIOfflineQueue", targets: ["OpenAPIOfflineQueue"]),
        .library(name: "CourierTesting", targets: ["CourierTesting"]),
        .library(name: "QueueConsole", targets: ["QueueConsole"]),
        // The one tool a user installs. `tour`, `reachability-bench` and `queue-agent` are
        // executable targets of this package only: `swift run tour` runs one, and a package
        // that depends on Courier sees none of them.
        .executable(name: "sync", targets: ["sync"]),
    ],
    traits: [
        // Off by default: swift-otel and swift-protobuf add 11-20 % to sync's first build
        // (Docs/Observability.md has the measurements). Tools/test builds with it.
        .trait(name: "OTLP", description: "sync run and sync drain export their spans over OTLP/HTTP (swift-otel) when OTEL_TRACES_EXPORTER=otlp"),
        // Off by default: it links Debian's libbrotli (libbrotli-dev), which a machine with
        // Swift's own prerequisites may not have. Tools/test and the Debian package build with it.
        .trait(name: "Brotli", description: "AsyncHTTPClientTransport decodes Content-Encoding: br through the system's libbrotli (apt install libbrotli-dev) and asks for it in Accept-Encoding"),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        // The range postgres-nio and swift-certificates accept, so adding it moves no resolved version.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.0"..<"6.0.0"),
        // The operator console (QueueConsole) only: a user of the queue alone compiles none of them.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // sync's own OTLP/HTTP span export, with the OTLP trait only; the gRPC exporter (and
        // grpc-swift) left out.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // `swift package generate-documentation --target NAME`: a module's API reference from its
        // catalog (Modules/NAME/NAME.docc). A plugin only: no target depends on it, so a package
        // that depends on Courier does not resolve it. Tools/docs builds every catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Modules
        module("HTTPCore", [httpTypes]),
        module("AsyncHTTPClientTransport", [
            "HTTPCore", httpTypes,
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
            .target(name: "CBrotli", condition: .when(traits: ["Brotli"])),
        ]),
        // Debian's libbrotli (the decoder; its header declares the encoder, which TestSupport
        // links), with the Brotli trait only.
        .systemLibrary(name: "CBrotli", path: "Modules/CBrotli", pkgConfig: "libbrotlidec", providers: [.apt(["libbrotli-dev"])]),
        module("Encoding", ["HTTPCore", httpTypes]),
        module("ErrorMapping", ["HTTPCore", httpTypes]),
        module("Plugins", [
            "HTTPCore", httpTypes,
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
        ]),
        module("Multipart", ["HTTPCore", "Encoding", httpTypes]),
        .target(name: "CNetlink", path: "Modules/CNetlink"),
        module("Reachability", ["HTTPCore", "CNetlink", httpTypes]),
        module("CombineAdapters", [
            "HTTPCore",
            .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
        ]),
        // The queue's engine: model, lifecycle, the drain, the storage contract, the service, the
        // sealing seam. No store: each store is a module of its own over this one, as SwiftNIO's
        // NIOPosix is over NIOCore.
        module("OfflineQueueCore", [
            "HTTPCore", "Reachability", httpTypes,
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
        ]),
        // The SQLite store (GRDB), the card's default: it re-exports OfflineQueueCore, so
        // `import OfflineQueue` is all a SQLite queue needs.
        module("OfflineQueue", [
            "OfflineQueueCore", "HTTPCore", "Reachability",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The PostgreSQL store: a queue shared by a fleet. It compiles no GRDB, and users of the
        // SQLite queue build none of it.
        module("OfflineQueuePostgres", [
            "OfflineQueueCore", "HTTPCore", "Reachability",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        // Sealing at rest: keyrings, per-entry keys, AES-GCM fields and STREAM-chunked bodies, and
        // the sealer a queue takes from a keyring (QueueSealing.on(keyring)): the queue's seam
        // (EntrySealer) is in OfflineQueue, so a queue that does not seal compiles no cryptography.
        // CSealAEAD: AES-256-GCM on its own buffers, through the BoringSSL swift-crypto links on Linux.
        module("QueueEncryption", ["OfflineQueueCore", "HTTPCore", "CSealAEAD", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "CSealAEAD", path: "Modules/CSealAEAD"),
        // systemd's notify protocol and watchdog for a QueueService under swift-service-lifecycle:
        // `sync run` and any service that embeds the queue.
        module("QueueSystemd", [
            "OfflineQueueCore", "HTTPCore",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // A ClientTransport for swift-openapi-generator's clients over APIClient; the queue part
        // is a module of its own, so a user of OpenAPITransport alone builds no GRDB.
        module("OpenAPITransport", ["HTTPCore", httpTypes, openAPIRuntime]),
        module("OpenAPIOfflineQueue", ["OpenAPITransport", "OfflineQueueCore", "HTTPCore", httpTypes, openAPIRuntime]),
        // For users' own tests: StubTransport, LoopbackServer (real HTTP on a loopback port), and
        // MemoryQueueStore (an offline queue without a file). Not test code: no test framework;
        // `tour` is built on it. `sync` links none of it: its demo serves with Hummingbird.
        module("CourierTesting", [
            "HTTPCore", "OfflineQueueCore", "Reachability", httpTypes,
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // The operator console: a Hummingbird router over an OfflineQueue (pages, their JSON twins,
        // actions) behind authentication, roles, cross-origin protection and security headers.
        module("QueueConsole", [
            "OfflineQueueCore", "HTTPCore", httpTypes,
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
            .product(name: "Mustache", package: "swift-mustache"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "NIOCore", package: "swift-nio"),
            // NIOThreadPool: password hashes run off the cooperative pool.
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),

        // Tools
        .executableTarget(
            name: "sync",
            dependencies: [
                "OfflineQueue", "OfflineQueuePostgres", "QueueEncryption", "QueueSystemd", "Reachability", "HTTPCore", "AsyncHTTPClientTransport", "Plugins",
                "QueueConsole", httpTypes,
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTLP"])),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Tools/sync",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "tour",
            dependencies: ["HTTPCore", "AsyncHTTPClientTransport", "CourierTesting", httpTypes],
            path: "Tools/tour",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "reachability-bench",
            dependencies: ["Reachability", "CNetlink"],
            path: "Tools/reachability-bench",
            swiftSettings: strictSettings
        ),

        // The queue's reference model, random programs over the storage contract, and the runner
        // that checks a store against the model step by step (Docs/ModelCheck.md).
        .target(
            name: "QueueModel",
            dependencies: [
                "OfflineQueue", "OfflineQueueCore", "OfflineQueuePostgres", "HTTPCore", "CourierTesting", "QueueTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/QueueModel",
            swiftSettings: strictSettings
        ),
        // The model check on its own, built for speed (Tools/model-check builds it in release).
        .executableTarget(
            name: "queue-model-check",
            dependencies: ["QueueModel", "QueueTestSupport", .product(name: "Logging", package: "swift-log")],
            path: "Tests/QueueModelCheck",
            swiftSettings: strictSettings
        ),

        // A drainer in its own process, for the queue's kill and multi-process tests.
        .executableTarget(
            name: "queue-agent",
            dependencies: ["OfflineQueue", "OfflineQueueCore", "OfflineQueuePostgres", "QueueEncryption", "HTTPCore", "AsyncHTTPClientTransport"],
            path: "Tests/QueueAgent",
            swiftSettings: strictSettings
        ),

        // Shared fixtures for the package's own tests: a regular library target (not a test
        // target) so test targets and the test-only executables can depend on it. It is not a
        // product, and no installed tool links it.
        .target(
            name: "TestSupport",
            dependencies: [
                "CourierTesting", "HTTPCore", httpTypes,
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .target(name: "CBrotli", condition: .when(traits: ["Brotli"])),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strictSettings,
            // BrotliFixture's encoder: CBrotli links the decoder only, so `sync` needs no encoder.
            linkerSettings: [.linkedLibrary("brotlienc", .when(traits: ["Brotli"]))]
        ),
        // The queue's fixtures (a store of each kind, a queue over it, the test cluster), shared
        // by the test targets of the engine and SQLite store, the PostgreSQL store and QueueSystemd.
        .target(
            name: "QueueTestSupport",
            dependencies: [
                "OfflineQueue", "OfflineQueueCore", "OfflineQueuePostgres", "HTTPCore", "Reachability", "AsyncHTTPClientTransport",
                "CourierTesting", "TestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/QueueTestSupport",
            swiftSettings: strictSettings
        ),

        // Tests
        tests("HTTPCoreTests", ["HTTPCore", "CourierTesting", "TestSupport", httpTypes]),
        tests("CourierTestingTests", ["CourierTesting", "HTTPCore", "OfflineQueue", "OfflineQueueCore", "AsyncHTTPClientTransport", httpTypes]),
        tests("AsyncHTTPClientTransportTests", [
            "AsyncHTTPClientTransport", "HTTPCore", "CourierTesting", "TestSupport", httpTypes,
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
            .target(name: "CBrotli", condition: .when(traits: ["Brotli"])),
        ]),
        tests("TransportConformanceTests", ["HTTPCore", "AsyncHTTPClientTransport", "TestSupport", httpTypes]),
        tests("HTTPBinTests", ["HTTPCore", "AsyncHTTPClientTransport", "TestSupport", httpTypes]),
        tests("EncodingTests", ["Encoding", "HTTPCore", "CourierTesting", "TestSupport", httpTypes]),
        tests("ErrorMappingTests", ["ErrorMapping", "HTTPCore", "CourierTesting", httpTypes]),
        tests("PluginsTests", [
            "Plugins", "HTTPCore", "AsyncHTTPClientTransport", "CourierTesting", "TestSupport", httpTypes,
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        ]),
        tests("MultipartTests", [
            "Multipart", "HTTPCore", "AsyncHTTPClientTransport", "CourierTesting", "TestSupport", httpTypes,
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "MultipartKit", package: "multipart-kit"),
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        tests("ReachabilityTests", [
            "Reachability", "HTTPCore", "CNetlink", "CourierTesting", "TestSupport", httpTypes,
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        tests("SeedParityTests", [
            "HTTPCore", "Encoding", "ErrorMapping", "Plugins", "Multipart", "Reachability", "CombineAdapters",
            "AsyncHTTPClientTransport", "CourierTesting", "TestSupport", httpTypes,
            .product(name: "Logging", package: "swift-log"),
            .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
        ]),
        // The docs' complete programs (```swift program blocks), copied by Tools/doc-snippets and
        // compiled here against the products a user depends on; never run.
        tests("DocSnippetsTests", [
            "HTTPCore", "AsyncHTTPClientTransport", "Encoding", "ErrorMapping", "Plugins", "Multipart", "Reachability",
            "OfflineQueue", "QueueSystemd", "CombineAdapters", "CourierTesting", "OpenAPITransport", "OpenAPIOfflineQueue", "QueueEncryption", httpTypes, openAPIRuntime,
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux, .windows, .android])),
        ]),
        // The client in Generated/ is made from openapi.yaml by Tools/openapi-generate.
        tests("OpenAPITransportTests", [
            "OpenAPITransport", "OpenAPIOfflineQueue", "OfflineQueue", "OfflineQueueCore", "Reachability", "HTTPCore", "AsyncHTTPClientTransport",
            "CourierTesting", "TestSupport", httpTypes, openAPIRuntime,
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        ], exclude: ["openapi.yaml", "openapi-generator-config.yaml"]),
        // known-answers.py computes the known-answer vectors again from the format's specification.
        tests("QueueEncryptionTests", ["QueueEncryption", .product(name: "Crypto", package: "swift-crypto")], exclude: ["known-answers.py"]),
        tests("QueueConsoleTests", [
            "QueueConsole", "OfflineQueue", "OfflineQueueCore", "OfflineQueuePostgres", "HTTPCore", "CourierTesting", httpTypes,
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ]),
        // Browser/console_driver.py drives headless Chromium for the console's browser tests.
        tests("SyncTests", ["OfflineQueue", "OfflineQueueCore", "HTTPCore", "CourierTesting", "TestSupport", httpTypes, .product(name: "GRDB", package: "GRDB.swift")], exclude: ["Browser/console_driver.py", "Samples"]),
        tests("OfflineQueueTests", [
            "OfflineQueue", "OfflineQueueCore", "OfflineQueuePostgres", "QueueEncryption", "QueueSystemd", "HTTPCore", "Reachability", "AsyncHTTPClientTransport", "CourierTesting", "TestSupport", "QueueTestSupport", httpTypes,
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        ]),
        // What only the PostgreSQL store has (the outbox, cut connections, a server restart,
        // its URLs and schema checks); the behaviour suites run on every store in OfflineQueueTests.
        tests("OfflineQueuePostgresTests", [
            "OfflineQueue", "OfflineQueuePostgres", "HTTPCore", "TestSupport", "QueueTestSupport",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The model check, a bounded share of it in every run (Tools/model-check runs it at length).
        tests("QueueModelTests", ["QueueModel", "QueueTestSupport"]),
        tests("QueueSystemdTests", [
            "OfflineQueue", "QueueSystemd", "HTTPCore", "TestSupport", "QueueTestSupport",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
