import CourierTesting
import Foundation
import HTTPCore
import OfflineQueue
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `--concurrency`'s default, seen from outside: the requests `sync run` has at its servers at
/// once, in all and at one host (the HTTP/1.1 connections its transport opens to a host).
@Suite("sync run: the default concurrency and connections per host")
struct SyncConcurrencyDefaultTests {
    /// Loopback servers (each its own origin, so its own connection pool) whose `/hold` holds
    /// every request until ``release()``, counting the requests held at once.
    final class Hosts: Sendable {
        let servers: [TestHTTPServer]
        let total = LockedBox(0), totalPeak = LockedBox(0)
        let active: [LockedBox<Int>], peaks: [LockedBox<Int>]
        private let released = LockedBox(false)

        init(count: Int) async throws {
            var servers: [TestHTTPServer] = []
            for _ in 0..<count { servers.append(try await TestHTTPServer.start()) }
            self.servers = servers
            active = servers.map { _ in LockedBox(0) }
            peaks = servers.map { _ in LockedBox(0) }
            for (index, server) in servers.enumerated() {
                let (total, totalPeak, active, peak, released) = (total, totalPeak, active[index], peaks[index], released)
                server.route("/hold") { _, writer in
                    let now = active.withLock { count -> Int in
                        count += 1
                        return count
                    }
                    peak.withLock { $0 = max($0, now) }
                    let all = total.withLock { count -> Int in
                        count += 1
                        return count
                    }
                    totalPeak.withLock { $0 = max($0, all) }
                    // Well within the 30 s timeout, even if the test never releases.
                    _ = await eventually(.seconds(20)) { released.current }
                    active.withLock { $0 -= 1 }
                    total.withLock { $0 -= 1 }
                    try await writer.respond(status: 200)
                }
            }
        }

        func release() { released.withLock { $0 = true } }

        func shutdown() async {
            for server in servers { await server.shutdown() }
        }
    }

    /// `sync run --no-reachability` plus `options` over `perHost` entries to each of `hosts`
    /// servers (enqueued in turn); holds the requests until `total` are at the servers and
    /// 300 ms more have passed; returns the peaks and the start line, every entry delivered.
    private func held(options: [String], hosts count: Int, perHost: Int, total: Int) async throws -> (total: Int, perHost: [Int], log: String) {
        let folder = try makeTemporaryFolder("sync-concurrency")
        defer { try? FileManager.default.removeItem(at: folder) }
        let hosts = try await Hosts(count: count)
        let sync = SyncRunner(database: folder.appendingPathComponent("queue.db").path)
        do {
            let client = APIClient(configuration: ClientConfiguration(baseURL: hosts.servers[0].baseURL), transport: StubTransport())
            let queue = try OfflineQueue(configuration: QueueConfiguration(path: sync.database), client: client)
            let urls = hosts.servers.map { $0.url("/hold").absoluteString }
            _ = try await queue.enqueue((0..<(count * perHost)).map {
                QueuedRequest(method: "POST", url: urls[$0 % count], body: .data(Data("{\"n\":\($0)}".utf8)))
            })
            await queue.close()
        }
        let (process, _, errors) = try sync.start(["run", "--no-reachability"] + options)
        let log = readToEnd(errors.fileHandleForReading)
        let reached = await eventually(.seconds(15)) { hosts.total.current >= total }
        // What the drain holds beyond the connections waits in the client's pool: none of it
        // reaches a server while these are held.
        try await Task.sleep(for: .milliseconds(300))
        let peaks = (hosts.totalPeak.current, hosts.peaks.map(\.current))
        hosts.release()
        #expect(reached, "\(total) requests at the servers at once (\(hosts.total.current))")
        let stats = { () async throws -> [String: Any] in try #require(try await sync("--json", "stats").json() as? [String: Any]) }
        #expect(await eventually { (try? await stats()["delivered"] as? Int) == count * perHost }, "every entry delivered")
        process.signal(SIGTERM)
        try await SyncRunner.wait(for: process, limit: .hangGuard)
        #expect(process.terminationStatus == 0)
        await hosts.shutdown()
        return (peaks.0, peaks.1, String(decoding: await log.value, as: UTF8.self))
    }

    @Test(
        "one HTTP/1.1 host: at most 16 connections by default (the rest of the 64 wait for one), 4 with --concurrency 4",
        arguments: [([String](), 16), (["--concurrency", "4"], 4)]
    )
    func connectionsPerHost(options: [String], connections: Int) async throws {
        let (total, perHost, log) = try await held(options: options, hosts: 1, perHost: 40, total: connections)
        #expect(total == connections && perHost == [connections], "\(connections) requests at the host at once, no more")
        #expect(log.contains("connections_per_host=\(connections)"), "the start line says so")
    }

    @Test(
        "eight HTTP/1.1 hosts: 64 requests at once by default (8 a host), 4 with --concurrency 4",
        arguments: [([String](), 64), (["--concurrency", "4"], 4)]
    )
    func concurrency(options: [String], concurrency: Int) async throws {
        let (total, perHost, log) = try await held(options: options, hosts: 8, perHost: 12, total: concurrency)
        #expect(total == concurrency, "\(concurrency) requests at the servers at once, no more")
        #expect(perHost.allSatisfy { $0 <= min(concurrency, 16) })
        #expect(log.contains("concurrency=\(concurrency)"), "the start line says so")
    }
}
