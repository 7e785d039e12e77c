import Foundation
import GRDB
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A queue on a disk that fills up while `sync drain` sends: what it sent is recorded with the
/// space it kept aside, so nothing reaches the server twice once space is back.
@Suite("sync: a full disk costs no duplicate", .serialized)
struct SyncDiskFullTests {
    /// How the bodies are stored: in the rows, or as files beside the queue.
    enum Bodies: String, CustomTestStringConvertible, CaseIterable {
        case inline, files
        var testDescription: String { rawValue }
    }

    /// A 3 MiB tmpfs holding the queue, a loopback server whose `/events` holds every request
    /// until the gate opens, and the idempotency keys it received.
    struct Lab {
        let folder: URL
        let tmpfs: Tmpfs
        let server: TestHTTPServer
        let sync: SyncRunner
        let keys = LockedBox<[String]>([])
        let open = LockedBox(false)

        init() async throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("sync-disk-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            tmpfs = try Tmpfs(under: folder, size: "3m")
            server = try await TestHTTPServer.start()
            sync = SyncRunner(database: tmpfs.path + "/queue.db")
            let (keys, open) = (keys, open)
            server.route("/events") { request, writer in
                if let key = request.values(of: "Idempotency-Key").first { keys.withLock { $0.append(key) } }
                _ = await eventually { open.current }
                try await writer.respond(status: 200)
            }
        }

        var url: String { server.url("/events").absoluteString }
        var reserve: String { sync.database + ".reserve" }
        var filler: String { tmpfs.path + "/filler" }

        /// The body arguments of `sync enqueue`: 64 KiB, the largest body kept in the row (the
        /// costliest to record), or an 80 KiB file that the queue keeps in its body folder.
        func body(_ bodies: Bodies) throws -> [String] {
            switch bodies {
            case .inline:
                return ["--data", String(repeating: "i", count: 64 * 1024)]
            case .files:
                let path = folder.appendingPathComponent("body.bin").path
                if !FileManager.default.fileExists(atPath: path) {
                    try Data(repeating: 0x66, count: 80 * 1024).write(to: URL(fileURLWithPath: path))
                }
                return ["--data-file", path]
            }
        }

        /// The reserve's size and the bytes its blocks take, or `nil` without one.
        func reserveFile() -> (size: Int, allocated: Int, mode: mode_t)? {
            var info = stat()
            guard stat(reserve, &info) == 0 else { return nil }
            return (Int(info.st_size), Int(info.st_blocks) * 512, info.st_mode & 0o777)
        }

        func finish() async {
            await server.shutdown()
            tmpfs.unmount()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test("the disk fills during sync drain: it exits 74 with what it sent recorded; an enqueue then exits 74 and leaves the reserve whole; once space is back every key reaches the server exactly once", arguments: Bodies.allCases)
    func drainOnFullDisk(bodies: Bodies) async throws {
        let lab = try await Lab()
        // More than the drain's first claim (16 at a concurrency of 4): some are never sent by it.
        let count = bodies == .inline ? 24 : 20
        let body = try lab.body(bodies)
        var enqueued: [String] = []
        for n in 0..<count {
            let key = "disk-\(bodies.rawValue)-\(n)"
            let result = try await lab.sync.run(["enqueue", "POST", lab.url, "--idempotency-key", key] + body)
            try #require(result.status == 0, "enqueue \(n): \(result.stderr)")
            enqueued.append(key)
        }
        let reserve = try #require(lab.reserveFile(), "a writer sets the reserve aside at open")
        #expect(reserve.size == 320 * 1024 && reserve.allocated >= reserve.size && reserve.mode == 0o600)

        // The drain's first sends are held at the server while the disk fills up.
        let (drain, out, err) = try lab.sync.start(["drain", "--no-reachability", "--concurrency", "4"])
        let stdout = readToEnd(out.fileHandleForReading)
        let stderr = readToEnd(err.fileHandleForReading)
        #expect(await eventually { !lab.keys.current.isEmpty }, "the drain started sending")
        try lab.tmpfs.fill()

        // An enqueue on the full disk stores nothing and leaves the reserve whole.
        let refused = try await lab.sync.run(["enqueue", "POST", lab.url, "--idempotency-key", "disk-refused"] + body)
        #expect(refused.status == 74 && refused.stderr.contains("full"), "\(refused.stderr)")
        let kept = try #require(lab.reserveFile(), "the enqueue did not eat the reserve")
        #expect(kept.size == reserve.size && kept.allocated >= reserve.size)

        lab.open.withLock { $0 = true }
        try await SyncRunner.wait(for: drain, limit: .hangGuard)
        let drainOut = String(decoding: await stdout.value, as: UTF8.self)
        let drainErr = String(decoding: await stderr.value, as: UTF8.self)
        #expect(drain.terminationStatus == 74, "\(drainOut)\(drainErr)")
        #expect(drainErr.contains("full") && drainErr.contains("recorded"), "\(drainErr)")
        #expect(lab.reserveFile() == nil, "the reserve was given back to record what was sent")
        let sentFirst = lab.keys.current
        #expect(Set(sentFirst).count == sentFirst.count, "nothing sent twice within the drain")
        #expect(sentFirst.count < count, "the drain stopped before the end")

        // Still full: a drain that cannot set its reserve aside sends nothing.
        try lab.tmpfs.fill()
        let stillFull = try await lab.sync("drain", "--no-reachability", "--concurrency", "4")
        #expect(stillFull.status == 74, "\(stillFull.stdout)\(stillFull.stderr)")
        #expect(lab.keys.current.count == sentFirst.count, "nothing sent on a disk still full")

        // Space is back: the rest goes, and nothing sent before goes again. On a disk this small
        // the log of a drain of 64 KiB rows can fill it once more (more so when a loaded machine
        // lets more outcomes gather in one commit): such a drain stops the same way, with what
        // it sent recorded, and the next one goes on.
        try FileManager.default.removeItem(atPath: lab.filler)
        var last = try await lab.sync("drain", "--no-reachability", "--concurrency", "4")
        for _ in 0..<5 where last.status == 74 {
            #expect(last.stderr.contains("recorded"), "\(last.stderr)")
            last = try await lab.sync("drain", "--no-reachability", "--concurrency", "4")
        }
        #expect(last.status == 0, "\(last.stdout)\(last.stderr)")
        let received = lab.keys.current
        #expect(received.sorted() == enqueued.sorted(), "every key exactly once: \(received.count) received for \(count) enqueued")
        #expect(lab.reserveFile()?.size == reserve.size, "the reserve is set aside again once there is room")
        let integrity = try await DatabaseQueue(path: lab.sync.database).read { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"])
        await lab.finish()
    }
}
