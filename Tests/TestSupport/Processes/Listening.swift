import Foundation
import NIOCore
import NIOPosix

/// Waits (at most ``Duration/hangGuard``) until a server just started as `process` accepts
/// connections on `port` of 127.0.0.1. When it exits first, or never listens, calls `stop` and
/// throws, naming the server and (for an exit) what `log` reads.
func awaitListening(_ process: ChildProcess, port: Int, name: String, log: () -> String, stop: () -> Void) async throws {
    let end = ContinuousClock.now + .hangGuard
    while ContinuousClock.now < end {
        if !process.isRunning {
            let text = log()
            stop()
            throw TestServerError("\(name) exited at start (status \(process.terminationStatus)): \(text)")
        }
        if await loopbackAccepts(port: port) { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    stop()
    throw TestServerError("\(name) did not accept connections on port \(port) within \(Duration.hangGuard)")
}

/// Whether a connection to `port` on 127.0.0.1 is accepted now.
func loopbackAccepts(port: Int) async -> Bool {
    do {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port).get()
        try? await channel.close()
        return true
    } catch {
        return false
    }
}
