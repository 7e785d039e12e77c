import Crypto
import Foundation
import Testing
@testable import QueueEncryption

/// A 100 MiB body sealed to a file, verified and opened from it, in pieces: memory stays
/// bounded by a few chunks whatever the body's size.
@Suite(.serialized) struct LargeBodyTests {
    static let size = 100 << 20

    @Test func hundredMebibytesStreamThroughAFileInBoundedMemory() throws {
        try withTemporaryFolder { folder in
            let (_, _, cipher) = makeCipher()
            let path = folder + "/body.sealed"
            let source = pattern(1 << 20, seed: 3)
            var memory = ResidentSampler()

            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            var sealer = cipher.bodySealer()
            var plainHash = SHA256()
            let sealStart = ContinuousClock.now
            for index in 0..<(Self.size / source.count) {
                // Pieces of 1 MiB minus a few bytes, so chunk boundaries fall inside them.
                let piece = index % 2 == 0 ? source : source.dropFirst(index % 7)
                plainHash.update(data: piece)
                try output.write(contentsOf: sealer.update(piece))
                memory.sample()
            }
            try output.write(contentsOf: sealer.finish())
            try output.close()
            let sealTime = ContinuousClock.now - sealStart

            let sealedSize = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            let expectedPlain = try #require(SealFormat.plaintextSize(sealedSize: sealedSize))

            var verifier = cipher.bodyOpener()
            var verified = 0
            let verifyStart = ContinuousClock.now
            try readPieces(path) { verified += try verifier.update($0).count; memory.sample() }
            verified += try verifier.finish().count
            let verifyTime = ContinuousClock.now - verifyStart
            #expect(verified == expectedPlain)

            var opener = cipher.bodyOpener()
            var openedHash = SHA256()
            try readPieces(path) { openedHash.update(data: try opener.update($0)); memory.sample() }
            openedHash.update(data: try opener.finish())
            #expect(openedHash.finalize() == plainHash.finalize())

            let megabytes = Double(expectedPlain) / 1_000_000
            print(
                """
                100 MiB sealed body: seal \(Int(megabytes / sealTime.seconds)) MB/s, verify \(Int(megabytes / verifyTime.seconds)) MB/s; \
                resident memory grew by at most \(memory.growth >> 20) MiB (\(memory.start >> 20) MiB at the start)
                """)
            // Not a timing check. A body held whole would add more than 100 MiB; the bound
            // leaves room for what other suites in the process allocate meanwhile (resident
            // memory is the process's: alone this grows by 4 MiB, beside the sealing, OpenAPI
            // and transport suites' multi-MiB bodies it grew by 47 MiB).
            #expect(memory.growth < 64 << 20)
        }
    }

    /// Calls `body` with the file's bytes in pieces of 1 MiB.
    func readPieces(_ path: String, _ body: (Data) throws -> Void) throws {
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? input.close() }
        while let piece = try input.read(upToCount: 1 << 20), !piece.isEmpty {
            try body(piece)
        }
    }
}

/// The process's resident memory (VmRSS), sampled: how far it rose above its first sample.
struct ResidentSampler {
    let start = Self.resident()
    private(set) var peak = 0

    var growth: Int { max(0, peak - start) }

    mutating func sample() {
        peak = max(peak, Self.resident())
    }

    static func resident() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
