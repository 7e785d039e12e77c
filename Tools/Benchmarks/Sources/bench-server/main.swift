// A minimal HTTP server for the benchmark: every request gets the same ~1 KB JSON body
// (`GET /big` gets 10 MiB instead), with keep-alive. It prints its port on the first line of
// standard output and runs until standard input closes (so it dies with the benchmark that
// started it).
//
// Options (the latency benchmark, `courier-bench --latency`):
//   --delay-ms N   answer each request N ms after it has arrived whole (scheduled on the event
//                  loop: a waiting answer holds no thread, so thousands can wait at once);
//   --tls          TLS with a self-signed certificate for localhost and 127.0.0.1, made at start
//                  with openssl in a temporary folder; ALPN offers h2 and http/1.1, and the same
//                  handler serves both (HTTP/2 streams through HTTP2FramePayloadToHTTP1ServerCodec),
//                  up to 256 concurrent streams per connection. The certificate's path (PEM) is
//                  printed on the second line, for the client to trust;
//   --http1        with --tls: ALPN offers http/1.1 only;
//   --port N       listen on port N (0, the default: any free port).
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

let body: ByteBuffer = {
    let items = (1...8).map { id in
        #"{"id":\#(id),"name":"Item number \#(id)","price":\#(Double(id) * 9.99),"tags":["alpha","beta","gamma"],"inStock":true}"#
    }
    return ByteBuffer(string: #"{"page":1,"total":8,"items":["# + items.joined(separator: ",") + "]}")
}()

/// `GET /big`: 10 MiB, for the large-body figure.
let bigBody = ByteBuffer(repeating: UInt8(ascii: "x"), count: 10 << 20)

let arguments = CommandLine.arguments.dropFirst()
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), arguments.index(after: index) < arguments.endIndex else { return nil }
    return arguments[arguments.index(after: index)]
}
let delay: TimeAmount? = (option("--delay-ms").flatMap { Int64($0) }).flatMap { $0 > 0 ? .milliseconds($0) : nil }
let useTLS = arguments.contains("--tls")
let http1Only = arguments.contains("--http1")

/// Serves HTTP/1.1 on a connection, or one HTTP/2 stream (behind HTTP2FramePayloadToHTTP1ServerCodec).
final class FixedResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let delay: TimeAmount?
    private var keepAlive = true
    private var http1 = true
    private var big = false
    /// `GET /page.gz`: the page gzipped (GzipPage.swift).
    private var gzipped = false

    init(delay: TimeAmount?) {
        self.delay = delay
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            http1 = head.version.major == 1
            keepAlive = !http1 || head.isKeepAlive
            big = head.uri == "/big"
            gzipped = head.uri == "/page.gz"
        case .body:
            break
        case .end:
            if let delay {
                context.eventLoop.assumeIsolated().scheduleTask(in: delay) { self.answer(context: context) }
            } else {
                answer(context: context)
            }
        }
    }

    private func answer(context: ChannelHandlerContext) {
        let answer = big ? bigBody : gzipped ? gzippedBody : body
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(answer.readableBytes))
        if gzipped { headers.add(name: "Content-Encoding", value: "gzip") }
        if http1 && !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(answer))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if http1 && !keepAlive { context.close(promise: nil) }
    }
}

/// A self-signed P-256 certificate for localhost and 127.0.0.1, valid one day, made with
/// openssl in a new temporary folder: (certificate, key) paths.
func makeCertificate() throws -> (certificate: String, key: String) {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bench-server-tls-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let certificate = folder.appendingPathComponent("cert.pem").path, key = folder.appendingPathComponent("key.pem").path
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-keyout", key, "-out", certificate,
    ]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        FileHandle.standardError.write(Data("bench-server: openssl req failed (\(process.terminationStatus))\n".utf8))
        exit(1)
    }
    return (certificate, key)
}

var sslContext: NIOSSLContext?
var certificatePath: String?
if useTLS {
    let files = try makeCertificate()
    certificatePath = files.certificate
    var tls = TLSConfiguration.makeServerConfiguration(
        certificateChain: try NIOSSLCertificate.fromPEMFile(files.certificate).map { .certificate($0) },
        privateKey: .privateKey(try NIOSSLPrivateKey(file: files.key, format: .pem))
    )
    tls.applicationProtocols = http1Only ? ["http/1.1"] : ["h2", "http/1.1"]
    sslContext = try NIOSSLContext(configuration: tls)
}
let tlsContext = sslContext

/// HTTP/2: 256 concurrent streams per connection (NIO's default is 100), the default windows.
let http2Connection: NIOHTTP2Handler.ConnectionConfiguration = {
    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
    configuration.initialSettings = nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
        + [HTTP2Setting(parameter: .maxConcurrentStreams, value: 256)]
    return configuration
}()

let threads = Int(ProcessInfo.processInfo.environment["BENCH_SERVER_THREADS"] ?? "1") ?? 1
let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        guard let tlsContext else {
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(FixedResponseHandler(delay: delay))
            }
        }
        do {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tlsContext))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        if http1Only {
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(FixedResponseHandler(delay: delay))
            }
        }
        return channel.configureCommonHTTPServerPipeline(
            connectionConfiguration: http2Connection,
            streamConfiguration: NIOHTTP2Handler.StreamConfiguration()
        ) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(FixedResponseHandler(delay: delay))
            }
        }
    }
    .bind(host: "127.0.0.1", port: option("--port").flatMap { Int($0) } ?? 0).wait()

FileHandle.standardOutput.write(Data("\(channel.localAddress?.port ?? 0)\n".utf8))
if let certificatePath { FileHandle.standardOutput.write(Data("\(certificatePath)\n".utf8)) }
_ = FileHandle.standardInput.readDataToEndOfFile()
try channel.close().wait()
try group.syncShutdownGracefully()
if let certificatePath { try? FileManager.default.removeItem(at: URL(fileURLWithPath: certificatePath).deletingLastPathComponent()) }
