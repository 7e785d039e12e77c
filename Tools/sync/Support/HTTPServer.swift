import ArgumentParser
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import OfflineQueue
import Prometheus
import QueueConsole
import ServiceLifecycle

/// Where `sync` listens (`--metrics-address`, `--console`, `sync console --address`):
/// `HOST:PORT`, `[IPv6]:PORT`, or a bare port for 127.0.0.1.
struct ListenAddress: Hashable, CustomStringConvertible {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init?(_ text: String) {
        let host: Substring
        let port: Substring
        if let bare = Int(text) {
            (host, port) = ("127.0.0.1", Substring(String(bare)))
        } else if text.hasPrefix("["), let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") {
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") {
            (host, port) = (text[..<colon], text[text.index(after: colon)...])
        } else {
            return nil
        }
        guard !host.isEmpty, !host.contains(where: \.isWhitespace), port.allSatisfy(\.isASCII), let number = Int(port),
              (0...65_535).contains(number) else { return nil }
        self.host = String(host)
        self.port = number
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether only this machine can connect: `localhost`, a 127/8 address or `::1`.
    var isLoopback: Bool {
        let host = self.host.lowercased()
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

/// `sync`'s one HTTP server: a Hummingbird application serving the console, `/metrics`, or
/// both, as a service of the command's group (it stops with the group's graceful shutdown).
/// A failure to bind ends the command with 71 and says which address.
struct HTTPServer: Service {
    /// Whether the listener is up: a failure before that is a failure to bind.
    final class Started: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    let application: Application<RouterResponder<ConsoleContext>>
    let address: ListenAddress
    /// What it serves, for the error when it cannot bind: "metrics", "the console".
    let what: String
    let started: Started

    /// A server of `router` at `address`; once listening it logs `announcements` (a message and
    /// a path such as `/metrics`) with the URL of the address bound (the port the system chose
    /// for port 0).
    init(router: Router<ConsoleContext>, address: ListenAddress, what: String, announcements: [(message: String, path: String)], logger: Logger) {
        let started = Started()
        self.started = started
        self.address = address
        self.what = what
        application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port)),
            onServerRunning: { channel in
                started.set()
                let bound = ListenAddress(host: address.host, port: channel.localAddress?.port ?? address.port)
                for (message, path) in announcements {
                    logger.info("\(message)", metadata: ["url": "http://\(bound)\(path)"])
                }
            },
            logger: logger
        )
    }

    func run() async throws {
        do {
            try await application.run()
        } catch where !started.isSet {
            complain("cannot serve \(what) on \(address): \(error)")
            throw SysExit.osError
        }
    }

    /// Makes Prometheus the process's metrics backend and returns its registry.
    static func bootstrapPrometheus() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["courier_queue_enqueue_to_delivery_seconds"] = QueueMetricsOptions.enqueueToDeliveryBuckets
        MetricsSystem.bootstrap(factory)
        return registry
    }

    /// `GET /metrics` (and `HEAD`) in Prometheus's text format from `registry`; 405 for any
    /// other method.
    static func addMetrics(to router: Router<ConsoleContext>, registry: PrometheusCollectorRegistry) {
        let contentType = "text/plain; version=0.0.4; charset=utf-8"
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: contentType], body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        router.head("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: contentType])
        }
        for method in [HTTPRequest.Method.post, .put, .delete, .patch] {
            router.on("/metrics", method: method) { _, _ in
                Response(
                    status: .methodNotAllowed, headers: [.contentType: "text/plain; charset=utf-8", .allow: "GET, HEAD"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: "only GET and HEAD\n"))
                )
            }
        }
    }
}

/// `sync run`'s `--metrics-address`.
struct MetricsOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Serve the queue's metrics on GET /metrics in Prometheus's text format at this address: HOST:PORT, [IPv6]:PORT, or a bare PORT for 127.0.0.1. Off unless given.",
        valueName: "address"
    ))
    var metricsAddress: String?

    func validate() throws {
        if let metricsAddress, ListenAddress(metricsAddress) == nil {
            throw ValidationError("--metrics-address \(metricsAddress.debugDescription) is not HOST:PORT, [IPv6]:PORT or a port (0 to 65535)")
        }
    }

    var address: ListenAddress? { metricsAddress.flatMap(ListenAddress.init) }
}
