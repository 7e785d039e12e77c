// A minimal HTTP/1.1 server for the benchmark: every request gets the same ~1 KB JSON body
// (`GET /big` gets 10 MiB instead), with keep-alive. It prints its port on the first line of standard output and runs until
// standard input closes (so it dies with the benchmark that started it).
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

let body: ByteBuffer = {
    let items = (1...8).map { id in
        #"{"id":\#(id),"name":"Item number \#(id)","price":\#(Double(id) * 9.99),"tags":["alpha","beta","gamma"],"inStock":true}"#
    }
    return ByteBuffer(string: #"{"page":1,"total":8,"items":["# + items.joined(separator: ",") + "]}")
}()

/// `GET /big`: 10 MiB, for the large-body figure.
let bigBody = ByteBuffer(repeating: UInt8(ascii: "x"), count: 10 << 20)

final class FixedResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var keepAlive = true
    private var big = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            keepAlive = head.isKeepAlive
            big = head.uri == "/big"
        case .body:
            break
        case .end:
            let answer = big ? bigBody : body
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(answer.readableBytes))
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(answer))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            if !keepAlive { context.close(promise: nil) }
        }
    }
}

let threads = Int(ProcessInfo.processInfo.environment["BENCH_SERVER_THREADS"] ?? "1") ?? 1
let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(FixedResponseHandler())
        }
    }
    .bind(host: "127.0.0.1", port: 0).wait()

FileHandle.standardOutput.write(Data("\(channel.localAddress?.port ?? 0)\n".utf8))
_ = FileHandle.standardInput.readDataToEndOfFile()
try channel.close().wait()
try group.syncShutdownGracefully()
