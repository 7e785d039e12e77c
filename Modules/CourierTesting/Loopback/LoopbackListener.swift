import HTTPCore
package import NIOCore
package import NIOHTTP1
import NIOPosix

/// A listening socket on a loopback port whose connections carry HTTP/1.1 request parts in and
/// raw bytes out, each served by its own child task: the base of ``LoopbackServer`` and of the
/// package's own test server (which writes broken HTTP on purpose, hence raw bytes out).
package final class LoopbackListener: Sendable {
    /// One accepted connection.
    package typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, ByteBuffer>

    /// The address it listens on.
    package let host: String
    /// The port the kernel chose.
    package let port: Int
    private let listener: NIOAsyncChannel<Connection, Never>
    private let accepting = LockedBox<Task<Void, Never>?>(nil)

    private init(host: String, port: Int, listener: NIOAsyncChannel<Connection, Never>) {
        self.host = host
        self.port = port
        self.listener = listener
    }

    /// Binds `host` (a loopback address) at a free port. Nothing is accepted before
    /// ``serve(_:)``.
    package static func bind(host: String) async throws -> LoopbackListener {
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
        guard let port = listener.channel.localAddress?.port else {
            try? await listener.channel.close()
            throw LoopbackServerError("the listener on \(host) has no port")
        }
        return LoopbackListener(host: host, port: port, listener: listener)
    }

    /// Accepts connections in the background and serves each with `handler`, which gets the
    /// connection and its number (counted from 1, in the order they were accepted).
    package func serve(_ handler: @escaping @Sendable (Connection, Int) async -> Void) {
        let listener = self.listener
        let task = Task<Void, Never> {
            _ = try? await listener.executeThenClose { inbound in
                await withDiscardingTaskGroup { group in
                    var number = 0
                    do {
                        for try await connection in inbound {
                            number += 1
                            let id = number
                            group.addTask { await handler(connection, id) }
                        }
                    } catch {}
                    group.cancelAll()
                }
            }
        }
        accepting.withLock { $0 = task }
    }

    /// Closes the listener and every connection, and waits until they are closed.
    package func shutdown() async {
        let task = accepting.current
        task?.cancel()
        try? await listener.channel.close()
        await task?.value
    }
}
