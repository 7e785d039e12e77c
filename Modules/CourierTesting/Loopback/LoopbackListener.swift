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
    private let unhanded: Unhanded

    private init(host: String, port: Int, listener: NIOAsyncChannel<Connection, Never>, unhanded: Unhanded) {
        self.host = host
        self.port = port
        self.listener = listener
        self.unhanded = unhanded
    }

    /// Binds `host` (a loopback address) at a free port. Nothing is accepted before
    /// ``serve(_:)``.
    package static func bind(host: String, port: Int = 0) async throws -> LoopbackListener {
        let unhanded = Unhanded()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    let connection = try Connection(wrappingChannelSynchronously: channel)
                    try unhanded.keep(connection)
                    return connection
                }
            }
        guard let port = listener.channel.localAddress?.port else {
            try? await listener.channel.close()
            throw LoopbackServerError("the listener on \(host) has no port")
        }
        return LoopbackListener(host: host, port: port, listener: listener, unhanded: unhanded)
    }

    /// The connections accepted and not yet handed to a handler, kept until one is (or until
    /// the shutdown closes them). SwiftNIO stops a debug build when an accepted connection is
    /// dropped unclosed (`Deinited NIOAsyncWriter without calling finish()`), and one accepted
    /// as the listener shuts down is never handed out: seen beside a busy loop in three runs of
    /// six of the service tests, whose clients connect as their servers shut down.
    final class Unhanded: Sendable {
        private struct State {
            var connections: [ObjectIdentifier: Connection] = [:]
            var closed = false
        }

        private let state = LockedBox(State())

        /// Keeps `connection`; refuses it once the listener shuts down (SwiftNIO then closes
        /// the channel, and no writer was made for anyone to drop).
        func keep(_ connection: Connection) throws {
            let kept = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.connections[ObjectIdentifier(connection.channel)] = connection
                return true
            }
            if !kept {
                // Made already: closed as NIO wants it closed, by its owner.
                Task { try? await connection.executeThenClose { _, _ in } }
                throw ChannelError.ioOnClosedChannel
            }
        }

        /// `connection` is being handed to its handler, which closes it.
        func handed(_ connection: Connection) {
            _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(connection.channel)) }
        }

        /// Refuses every later connection and closes those never handed out.
        func close() async {
            let left = state.withLock { state -> [Connection] in
                state.closed = true
                defer { state.connections.removeAll() }
                return Array(state.connections.values)
            }
            for connection in left { try? await connection.executeThenClose { _, _ in } }
        }
    }

    /// Accepts connections in the background and serves each with `handler`, which gets the
    /// connection and its number (counted from 1, in the order they were accepted).
    package func serve(_ handler: @escaping @Sendable (Connection, Int) async -> Void) {
        let (listener, unhanded) = (self.listener, self.unhanded)
        let task = Task<Void, Never> {
            _ = try? await listener.executeThenClose { inbound in
                await withDiscardingTaskGroup { group in
                    var number = 0
                    do {
                        for try await connection in inbound {
                            number += 1
                            let id = number
                            unhanded.handed(connection)
                            group.addTask { await handler(connection, id) }
                        }
                    } catch {}
                    group.cancelAll()
                }
            }
        }
        accepting.withLock { $0 = task }
    }

    /// Closes the listener and every connection, and waits until they are closed: the
    /// connections being served, and those accepted but never handed out (``Unhanded``).
    package func shutdown() async {
        let task = accepting.current
        task?.cancel()
        try? await listener.channel.close()
        await task?.value
        await unhanded.close()
    }
}
