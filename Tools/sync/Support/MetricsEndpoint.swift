import ArgumentParser
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import ServiceLifecycle

/// Where `sync run --metrics-address` listens: `HOST:PORT`, `[IPv6]:PORT`, or a bare port for
/// 127.0.0.1.
struct MetricsAddress: Hashable, CustomStringConvertible {
    var host: String
    var port: Int

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
}

/// `GET /metrics` in Prometheus's text format, from a registry that the process's
/// `MetricsSystem` fills: a small HTTP/1.1 listener on SwiftNIO, one answer per connection.
/// It runs as a service of `sync run`'s group and stops with it.
struct MetricsEndpoint: Service {
    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    let registry: PrometheusCollectorRegistry
    let listener: NIOAsyncChannel<Connection, Never>
    /// The address bound, with the port the system chose for port 0.
    let address: MetricsAddress

    /// Binds `address`; throws what the system said (the port is taken, the host has no such
    /// address).
    static func bind(_ address: MetricsAddress, registry: PrometheusCollectorRegistry) async throws -> MetricsEndpoint {
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: address.host, port: address.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
        var bound = address
        bound.port = listener.channel.localAddress?.port ?? address.port
        return MetricsEndpoint(registry: registry, listener: listener, address: bound)
    }

    /// Serves until the group shuts down gracefully, then closes the listener and returns:
    /// the cancellation that ends the accept loop is the normal end, not a failure.
    func run() async throws {
        let registry = self.registry
        do {
            try await cancelWhenGracefulShutdown {
                try await listener.executeThenClose { inbound in
                    try await withThrowingDiscardingTaskGroup { group in
                        for try await connection in inbound {
                            group.addTask { await Self.serve(connection, registry: registry) }
                        }
                    }
                }
            }
        } catch is CancellationError {
            return
        }
    }

    /// Answers the connection's first request, then closes it.
    private static func serve(_ connection: Connection, registry: PrometheusCollectorRegistry) async {
        try? await connection.executeThenClose { inbound, outbound in
            var request: HTTPRequestHead?
            for try await part in inbound {
                switch part {
                case .head(let head): request = head
                case .body: continue
                case .end:
                    guard let request else { return }
                    let (status, body, extra) = answer(request, registry: registry)
                    var headers = HTTPHeaders(extra)
                    headers.add(name: "Content-Length", value: String(body.count))
                    headers.add(name: "Connection", value: "close")
                    try await outbound.write(.head(HTTPResponseHead(version: request.version, status: status, headers: headers)))
                    if request.method != .HEAD && !body.isEmpty {
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
                    }
                    try await outbound.write(.end(nil))
                    return
                }
            }
        }
    }

    /// The status, body and headers for `request`.
    static func answer(_ request: HTTPRequestHead, registry: PrometheusCollectorRegistry) -> (HTTPResponseStatus, [UInt8], [(String, String)]) {
        let path = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? request.uri
        guard path == "/metrics" else {
            return (.notFound, Array("not found: the metrics are at /metrics\n".utf8), [("Content-Type", "text/plain; charset=utf-8")])
        }
        guard request.method == .GET || request.method == .HEAD else {
            return (.methodNotAllowed, Array("only GET and HEAD\n".utf8), [("Content-Type", "text/plain; charset=utf-8"), ("Allow", "GET, HEAD")])
        }
        return (.ok, registry.emitToBuffer(), [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")])
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
        if let metricsAddress, MetricsAddress(metricsAddress) == nil {
            throw ValidationError("--metrics-address \(metricsAddress.debugDescription) is not HOST:PORT, [IPv6]:PORT or a port (0 to 65535)")
        }
    }

    var address: MetricsAddress? { metricsAddress.flatMap(MetricsAddress.init) }
}
