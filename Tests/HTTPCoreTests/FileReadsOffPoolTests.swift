import Foundation
import HTTPCore
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A file body is opened and read off the cooperative pool: reads that block (here FIFOs with
/// nothing written yet, as a cold disk would) leave the pool free for every other task.
@Suite("ByteStream(contentsOf:): file reads leave the cooperative pool free")
struct FileReadsOffPoolTests {
    @Test("six FIFO bodies blocked in their reads (three times the pool's threads on two cores): a task still runs, then each body arrives whole")
    func blockedReadsLeaveThePoolFree() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-fifo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = max(6, 3 * ProcessInfo.processInfo.activeProcessorCount)
        let paths = (0..<count).map { folder.appendingPathComponent("body-\($0)").path }
        // Each FIFO held open for reading and writing by the test, so a reader's open never
        // waits; its read waits until the test writes and closes (the end of the body).
        var writers: [Int32] = []
        for path in paths {
            try #require(mkfifo(path, 0o600) == 0)
            let fd = open(path, O_RDWR)
            try #require(fd >= 0)
            writers.append(fd)
        }
        let payloads = (0..<count).map { Data(repeating: UInt8(truncatingIfNeeded: $0), count: 1_000 + $0) }
        let readers = paths.map { path in
            Task { try await ByteStream(contentsOf: URL(fileURLWithPath: path)).collect(upTo: 1 << 20) }
        }
        // A task queued behind the readers: with reads that held pool threads, it could not run
        // until the bodies were written.
        let ran = DispatchSemaphore(value: 0)
        let probe = Task.detached { ran.signal() }
        // On a thread of its own: after 300 ms (the readers blocked by then, on a machine that is
        // not loaded), wait for the probe (at most a hang guard: reads that held the pool keep it
        // from running until the bodies are written, however long that is), then write each body. A reader that has not opened its path yet (queued
        // behind others) must not find a FIFO without a writer, where its open would wait for
        // ever: a regular file with the same body is renamed over the FIFO before the writer
        // closes it, so a reader finds one or the other, both with the body.
        let fds = writers
        let ranWhileBlocked = await onOwnThread { () -> Bool in
            Thread.sleep(forTimeInterval: 0.3)
            let ranInTime = ran.wait(timeout: .now() + Duration.hangGuard.seconds) == .success
            for (index, (fd, payload)) in zip(fds, payloads).enumerated() {
                _ = payload.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
                let file = paths[index] + ".file"
                if (try? payload.write(to: URL(fileURLWithPath: file))) != nil { rename(file, paths[index]) }
                close(fd)
            }
            return ranInTime
        }
        _ = await probe.value
        #expect(ranWhileBlocked, "a task waited for the blocked file reads: they held the cooperative pool")
        for (reader, payload) in zip(readers, payloads) {
            #expect(try await reader.value == payload)
        }
    }

    @Test("a file that cannot be opened fails the stream's first read with its path; a file read in many batches arrives whole")
    func missingAndLargeFiles() async throws {
        let missing = URL(fileURLWithPath: "/nonexistent/courier-\(UUID().uuidString)")
        await #expect(throws: NetworkError.self) { try await ByteStream(contentsOf: missing).collect(upTo: 1 << 20) }

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-batches-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        // 3 MiB + 5 bytes in chunks of 1,000 bytes: batches of 16 chunks, the last one short.
        let bytes = TestPayload.periodic(TestPayload.affinePeriod(multiplier: 7), count: 3 * 1_048_576 + 5)
        try bytes.write(to: file)
        var sizes: [Int] = []
        var read = Data()
        for try await chunk in ByteStream(contentsOf: file, chunkSize: 1_000) {
            sizes.append(chunk.count)
            read.append(chunk)
        }
        #expect(read == bytes)
        #expect(sizes.dropLast().allSatisfy { $0 == 1_000 } && sizes.last == bytes.count % 1_000)
    }
}
