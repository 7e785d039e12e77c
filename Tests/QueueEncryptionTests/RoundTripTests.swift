import Foundation
import Testing
@testable import QueueEncryption

@Suite struct RoundTripTests {
    static let sizes = [
        0, 1, 100, SealFormat.chunkSize - 1, SealFormat.chunkSize, SealFormat.chunkSize + 1,
        2 * SealFormat.chunkSize, 3 * SealFormat.chunkSize + 7,
    ]

    @Test(arguments: sizes)
    func inMemory(size: Int) throws {
        let (_, _, cipher) = makeCipher()
        let plaintext = pattern(size)
        let sealed = cipher.seal(plaintext, field: .body)
        #expect(sealed.count == SealFormat.sealedSize(plaintextSize: size))
        #expect(SealFormat.plaintextSize(sealedSize: sealed.count) == size)
        #expect(try cipher.open(sealed, field: .body) == plaintext)
    }

    /// Pieces of sizes that straddle chunk boundaries, on both sides, give the same bytes as
    /// sealing in one call.
    @Test(arguments: sizes)
    func streamedInOddPieces(size: Int) throws {
        let (_, _, cipher) = makeCipher()
        let plaintext = pattern(size, seed: 7)
        var sealer = cipher.bodySealer()
        var sealed = Data()
        for piece in pieces(plaintext, size: 10_007) { sealed.append(sealer.update(piece)) }
        sealed.append(sealer.finish())
        #expect(sealed == cipher.seal(plaintext, field: .body))

        var opener = cipher.bodyOpener()
        var opened = Data()
        for piece in pieces(sealed, size: 65_551) { opened.append(try opener.update(piece)) }
        opened.append(try opener.finish())
        #expect(opened == plaintext)
    }

    /// A piece of exactly one chunk is sealed one call later, when the sealer knows it is not
    /// the last; the output is the same.
    @Test func streamedInWholeChunks() throws {
        let (_, _, cipher) = makeCipher()
        let plaintext = pattern(3 * SealFormat.chunkSize)
        var sealer = cipher.bodySealer()
        let first = sealer.update(plaintext.prefix(SealFormat.chunkSize))
        #expect(first.isEmpty)
        var sealed = first
        for piece in pieces(plaintext, size: SealFormat.chunkSize).dropFirst() { sealed.append(sealer.update(piece)) }
        sealed.append(sealer.finish())
        #expect(sealed == cipher.seal(plaintext, field: .body))
        var opener = cipher.bodyOpener()
        var opened = Data()
        for piece in pieces(sealed, size: SealFormat.sealedChunkSize) { opened.append(try opener.update(piece)) }
        opened.append(try opener.finish())
        #expect(opened == plaintext)
    }

    @Test func emptyPiecesChangeNothing() throws {
        let (_, _, cipher) = makeCipher()
        let plaintext = pattern(SealFormat.chunkSize + 10)
        var sealer = cipher.bodySealer()
        var sealed = sealer.update(Data())
        sealed.append(sealer.update(plaintext))
        sealed.append(sealer.update(Data()))
        sealed.append(sealer.finish())
        #expect(sealed == cipher.seal(plaintext, field: .body))
        var opener = cipher.bodyOpener()
        var opened = try opener.update(Data())
        opened.append(try opener.update(sealed))
        opened.append(try opener.update(Data()))
        opened.append(try opener.finish())
        #expect(opened == plaintext)
    }

    @Test func eachFieldAndEntrySealsDifferently() throws {
        let (keyring, queue, cipher) = makeCipher()
        let plaintext = Data("same".utf8)
        let other = EntryCipher(sealingWith: keyring, queueID: queue, idempotencyKey: "entry-1")
        let sealed = [
            cipher.seal(plaintext, field: .target), cipher.seal(plaintext, field: .headers), cipher.seal(plaintext, field: .body),
            other.seal(plaintext, field: .target),
        ]
        #expect(Set(sealed).count == 4)
        #expect(cipher.entrySeal.salt != other.entrySeal.salt)
        #expect(cipher.entrySeal.keyID == keyring.primary.id)
        #expect(cipher.entrySeal.version == SealFormat.version)
    }

    @Test func verifyBodyReadsAStream() async throws {
        let (_, _, cipher) = makeCipher()
        let plaintext = pattern(2 * SealFormat.chunkSize + 3)
        let sealed = cipher.seal(plaintext, field: .body)
        let stream = AsyncStream<Data> { continuation in
            for piece in pieces(sealed, size: 4096) { continuation.yield(piece) }
            continuation.finish()
        }
        #expect(try await cipher.verifyBody(stream) == plaintext.count)
    }

    @Test func sealedSizeArithmetic() {
        let chunk = SealFormat.chunkSize, sealedChunk = SealFormat.sealedChunkSize
        #expect(SealFormat.sealedSize(plaintextSize: 0) == 16)
        #expect(SealFormat.sealedSize(plaintextSize: chunk) == sealedChunk)
        #expect(SealFormat.sealedSize(plaintextSize: chunk + 1) == sealedChunk + 17)
        #expect(SealFormat.chunkCount(plaintextSize: 100 << 20) == 1600)
        for size in [0, 1, chunk - 1, chunk, chunk + 1, 5 * chunk, 5 * chunk + 9] {
            #expect(SealFormat.plaintextSize(sealedSize: SealFormat.sealedSize(plaintextSize: size)) == size)
        }
        // Sizes no plaintext seals to: shorter than a tag, or an empty chunk after a full one.
        for sealed in [0, 15, sealedChunk + 1, sealedChunk + 15, sealedChunk + 16, 2 * sealedChunk + 16] {
            #expect(SealFormat.plaintextSize(sealedSize: sealed) == nil, "sealed size \(sealed)")
        }
    }
}
