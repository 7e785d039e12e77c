import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `sync run`'s watchdog pings mean progress: they go on while a send is within its timeout,
/// however long that is against WatchdogSec, and stop while a database call hangs past
/// `--store-timeout`, so systemd restarts a hung service and only a hung one.
@Suite("sync run: a watchdog that means progress", .serialized)
struct SyncWatchdogTests {
    @Test("a server that accepts and never answers: pings go on through each send, its --timeout longer (4 s) or shorter (1 s) than WatchdogSec (2 s), and the send times out and is retried", arguments: [4, 1])
    func hungServer(timeout: Int) async throws {
        let folder = try makeTemporaryFolder("watchdog-send")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestHTTPServer.start()
        let arrivals = LockedBox(0)
        server.route("/never") { _, writer in
            arrivals.withLock { $0 += 1 }
            try await Task.sleep(for: .seconds(120))
            try await writer.respond(status: 200)
        }
        let socket = try NotifySocket()
        var sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        #expect(try await sync("enqueue", "POST", server.url("/never").absoluteString).status == 0)
        sync.environment = ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"]
        let (process, _, errors) = try sync.start(["run", "--no-reachability", "--timeout", "\(timeout)", "--log-format", "json", "--log-level", "debug"])
        defer { process.signal(SIGKILL) }
        let log = readToEnd(errors.fileHandleForReading)
        #expect(await socket.receive(containing: "READY=1").last?.contains("READY=1") == true)
        #expect(await eventually { arrivals.current >= 1 }, "the send reached the server")
        // At least six seconds of a send that hangs (longer than WatchdogSec, and than either
        // timeout) and six pings: the pings go on through the hung send and its timeout. How
        // many pings fit in six seconds is the machine's load, not the behaviour.
        var messages: [String] = []
        let since = ContinuousClock.now
        while ContinuousClock.now - since < .seconds(6) || messages.filter({ $0 == "WATCHDOG=1" }).count < 6,
              let message = await socket.receive() {
            messages.append(message)
        }
        #expect(messages.filter { $0 == "WATCHDOG=1" }.count >= 6, "pinged while the send waited: \(messages)")
        #expect(!messages.contains { $0.contains("stuck") }, "\(messages)")
        // The send ended by its timeout and the entry waits for its next attempt.
        process.signal(SIGTERM)
        let exited = await process.exited(limit: .hangGuard)
        if !exited { process.signal(SIGKILL) }
        let text = String(decoding: await log.value, as: UTF8.self)
        #expect(exited, "sync run stopped after SIGTERM: \(text)")
        let listed = try #require(try await sync("--json", "list").json() as? [[String: Any]])
        let attempts = listed.first?["attempts"] as? Int ?? 0
        #expect(attempts >= 1, "the hung send timed out and counted: \(listed)")
        await server.shutdown()
    }

    @Test("a notify socket nobody reads (its queue of ten datagrams full) holds up neither the pings' task nor the shutdown: SIGTERM ends sync run at once")
    func unreadNotifySocket() async throws {
        let folder = try makeTemporaryFolder("watchdog-unread")
        defer { try? FileManager.default.removeItem(at: folder) }
        let socket = try NotifySocket()
        var sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        // A ping every 50 ms: the socket's queue (net.unix.max_dgram_qlen, 10 here) fills in half a second.
        sync.environment = ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "200000"]
        let (process, _, errors) = try sync.start(["run", "--no-reachability", "--log-format", "json", "--log-level", "debug"])
        defer { process.signal(SIGKILL) }
        let log = readToEnd(errors.fileHandleForReading)
        #expect(await socket.receive(containing: "READY=1").last?.contains("READY=1") == true)
        // Nothing reads the socket for three seconds (the scenario, not a synchronisation).
        try await Task.sleep(for: .seconds(3))
        process.signal(SIGTERM)
        let exited = await process.exited(limit: .hangGuard)
        if !exited { process.signal(SIGKILL) }
        let text = String(decoding: await log.value, as: UTF8.self)
        #expect(exited, "sync run stopped at SIGTERM although its notify socket was full: \(text)")
        #expect(process.terminationStatus == 0, "\(text)")
        // What could not go out while the queue was full is dropped, not queued up in the process:
        // the socket holds at most its queue's worth.
        var left = 0
        while await socket.receive(limit: .milliseconds(200)) != nil { left += 1 }
        #expect(left <= 16, "\(left)")
    }

    @Test("a database call that blocks past --store-timeout stops the pings and says why in STATUS=; they resume once it returns")
    func blockedStore() async throws {
        let folder = try makeTemporaryFolder("watchdog-store")
        defer { try? FileManager.default.removeItem(at: folder) }
        let socket = try NotifySocket()
        var sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        sync.environment = ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "1000000"]
        // A poll each second: each drain starts with a write, which waits for the lock.
        let (process, _, _) = try sync.start(["run", "--no-reachability", "--poll", "1", "--store-timeout", "2", "--log-format", "json"])
        defer { process.signal(SIGKILL) }
        #expect(await socket.receive(containing: "READY=1").last?.contains("READY=1") == true)
        #expect(await socket.receive(containing: "WATCHDOG=1").last == "WATCHDOG=1", "alive before the lock")

        let holder = try LockHolder(database: sync.database, in: folder)
        defer { holder.stop() }
        #expect(await eventually { holder.isLocked })
        let stuck = await socket.receive(containing: "STATUS=stuck:", limit: .hangGuard)
        let status = try #require(stuck.last)
        #expect(status.contains("STATUS=stuck: a store call"), "\(stuck)")
        // While the lock is held, not one ping; after the release, pings again.
        var whileLocked: [String] = []
        let until = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < until, let message = await socket.receive(limit: until - ContinuousClock.now) {
            whileLocked.append(message)
        }
        #expect(!whileLocked.contains("WATCHDOG=1"), "no ping while a call hangs: \(whileLocked)")
        holder.release()
        let resumed = await socket.receive(containing: "WATCHDOG=1", limit: .hangGuard)
        #expect(resumed.last == "WATCHDOG=1", "pings resume once the call returns: \(resumed)")
        process.signal(SIGTERM)
        try await SyncRunner.wait(for: process, limit: .hangGuard)
        #expect(process.terminationStatus == 0)
    }
}

/// Another process holding SQLite's write lock on the queue (`BEGIN EXCLUSIVE`, Python's
/// sqlite3) until told to let go: every write of the queue waits meanwhile.
final class LockHolder: Sendable {
    private let process: ChildProcess
    private let input: Pipe
    private let marker: String

    init(database: String, in folder: URL) throws {
        marker = folder.appendingPathComponent("locked").path
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
            db.execute("BEGIN EXCLUSIVE")
            open(sys.argv[2], "w").close()
            sys.stdin.readline()
            db.execute("COMMIT")
            """
        process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, database, marker]
        input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    var isLocked: Bool { FileManager.default.fileExists(atPath: marker) }

    func release() {
        input.fileHandleForWriting.write(Data("go\n".utf8))
    }

    func stop() {
        if process.isRunning { process.signal(SIGKILL) }
    }
}
