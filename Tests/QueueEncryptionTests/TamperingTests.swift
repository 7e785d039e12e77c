import Foundation
import Testing
@testable import QueueEncryption

/// What an attacker with write access to the store, but no key, can do to a sealed entry:
/// every change is refused, and the error names what failed.
@Suite struct TamperingTests {
    let keyring = Keyring.generate()
    let queue = UUID()
    let plaintext = pattern(3 * SealFormat.chunkSize + 100)

    func cipher(_ idempotencyKey: String = "entry-1") -> EntryCipher {
        EntryCipher(sealingWith: keyring, queueID: queue, idempotencyKey: idempotencyKey)
    }

    func opener(_ seal: EntrySeal, idempotencyKey: String = "entry-1", queue: UUID? = nil) throws -> EntryCipher {
        try EntryCipher(opening: seal, with: keyring, queueID: queue ?? self.queue, idempotencyKey: idempotencyKey)
    }

    func chunks(_ sealed: Data) -> [Data] { pieces(sealed, size: SealFormat.sealedChunkSize) }

    @Test(arguments: [0, 1, 2, 3])
    func flippedByteInAnyChunk(chunk: Int) throws {
        let cipher = cipher()
        var sealed = cipher.seal(plaintext, field: .body)
        let offset = chunk * SealFormat.sealedChunkSize + 5
        sealed[offset] ^= 0x01
        let error = sealError { _ = try opener(cipher.entrySeal).open(sealed, field: .body) }
        #expect(error == .authenticationFailed(field: .body, chunk: chunk))
    }

    @Test func flippedTagByte() throws {
        let cipher = cipher()
        var sealed = cipher.seal(Data("x".utf8), field: .target)
        sealed[sealed.count - 1] ^= 0x80
        #expect(sealError { _ = try cipher.open(sealed, field: .target) } == .authenticationFailed(field: .target, chunk: 0))
    }

    @Test func swappedChunks() throws {
        let cipher = cipher()
        var parts = chunks(cipher.seal(plaintext, field: .body))
        parts.swapAt(0, 1)
        let error = sealError { _ = try cipher.open(Data(parts.joined()), field: .body) }
        #expect(error == .authenticationFailed(field: .body, chunk: 0))
    }

    @Test func droppedLastChunk() throws {
        let cipher = cipher()
        let parts = chunks(cipher.seal(plaintext, field: .body))
        let error = sealError { _ = try cipher.open(Data(parts.dropLast().joined()), field: .body) }
        #expect(error == .truncated(field: .body, chunk: 3))
        #expect(error?.kind == .truncated)
    }

    @Test func cutMidChunkAndEmpty() throws {
        let cipher = cipher()
        let sealed = cipher.seal(plaintext, field: .body)
        #expect(sealError { _ = try cipher.open(sealed.dropLast(50), field: .body) }?.kind == .authenticationFailed)
        let parts = chunks(sealed)
        let cutInTag = Data(parts.dropLast().joined()) + parts.last!.prefix(10)
        #expect(sealError { _ = try cipher.open(cutInTag, field: .body) } == .truncated(field: .body, chunk: 3))
        #expect(sealError { _ = try cipher.open(Data(), field: .body) } == .truncated(field: .body, chunk: 0))
    }

    /// After a full final chunk, anything appended is found as trailing data.
    @Test func appendedAfterAFullFinalChunk() throws {
        let cipher = cipher()
        let parts = chunks(cipher.seal(pattern(3 * SealFormat.chunkSize), field: .body))
        let error = sealError { _ = try cipher.open(Data((parts + [parts[1]]).joined()), field: .body) }
        #expect(error == .trailingData(field: .body, chunk: 2))
        let oneMore = Data(parts.joined()) + Data([0])
        #expect(sealError { _ = try cipher.open(oneMore, field: .body) } == .trailingData(field: .body, chunk: 2))
    }

    /// After a shorter final chunk, appended bytes run into it (a reader cannot tell where it
    /// ended), so it no longer authenticates.
    @Test func appendedAfterAShortFinalChunk() throws {
        let cipher = cipher()
        let parts = chunks(cipher.seal(plaintext, field: .body))
        let error = sealError { _ = try cipher.open(Data((parts + [parts[1]]).joined()), field: .body) }
        #expect(error == .authenticationFailed(field: .body, chunk: 3))
        let oneMore = Data(parts.joined()) + Data([0])
        #expect(sealError { _ = try cipher.open(oneMore, field: .body) } == .authenticationFailed(field: .body, chunk: 3))
    }

    @Test func ciphertextSwappedBetweenEntries() throws {
        let first = cipher("entry-1"), second = cipher("entry-2")
        let sealedFirst = first.seal(Data("first".utf8), field: .body)
        // The second entry's row now holds the first entry's ciphertext, and even its salt
        // and key id: the idempotency key in the associated data still tells them apart.
        let error = sealError { _ = try opener(first.entrySeal, idempotencyKey: "entry-2").open(sealedFirst, field: .body) }
        #expect(error == .authenticationFailed(field: .body, chunk: 0))
        let withOwnSeal = sealError { _ = try opener(second.entrySeal, idempotencyKey: "entry-2").open(sealedFirst, field: .body) }
        #expect(withOwnSeal == .authenticationFailed(field: .body, chunk: 0))
    }

    @Test func movedToAnotherQueue() throws {
        let cipher = cipher()
        let sealed = cipher.seal(Data("x".utf8), field: .body)
        let error = sealError { _ = try opener(cipher.entrySeal, queue: UUID()).open(sealed, field: .body) }
        #expect(error?.kind == .authenticationFailed)
    }

    @Test func headersOpenedAsBody() throws {
        let cipher = cipher()
        let headers = cipher.seal(Data("accept: */*".utf8), field: .headers)
        #expect(sealError { _ = try cipher.open(headers, field: .body) } == .authenticationFailed(field: .body, chunk: 0))
        #expect(sealError { _ = try cipher.open(headers, field: .target) } == .authenticationFailed(field: .target, chunk: 0))
        let request = cipher.seal(Data("\0\0\0\u{1}/accept: */*\n".utf8), field: .request)
        #expect(sealError { _ = try cipher.open(request, field: .body) } == .authenticationFailed(field: .body, chunk: 0))
        #expect(sealError { _ = try cipher.open(cipher.seal(Data("x".utf8), field: .body), field: .request) } == .authenticationFailed(field: .request, chunk: 0))
    }

    @Test func saltSwapped() throws {
        let first = cipher("entry-1"), second = cipher("entry-1")
        let sealed = first.seal(Data("x".utf8), field: .body)
        let swapped = EntrySeal(version: SealFormat.version, keyID: first.entrySeal.keyID, salt: second.entrySeal.salt)
        #expect(sealError { _ = try opener(swapped).open(sealed, field: .body) }?.kind == .authenticationFailed)
        let short = EntrySeal(version: SealFormat.version, keyID: first.entrySeal.keyID, salt: first.entrySeal.salt.prefix(8))
        #expect(sealError { _ = try opener(short) }?.kind == .invalidSeal)
    }

    @Test func unknownKeyID() throws {
        let cipher = cipher()
        let seal = EntrySeal(version: SealFormat.version, keyID: KeyID("00000000")!, salt: cipher.entrySeal.salt)
        #expect(sealError { _ = try opener(seal) } == .unknownKey(KeyID("00000000")!))
    }

    @Test func keyIDChangedToAnotherKey() throws {
        var keyring = keyring
        let old = keyring.primary
        keyring.addPrimary()
        let cipher = EntryCipher(sealingWith: keyring, queueID: queue, idempotencyKey: "entry-1")
        let sealed = cipher.seal(Data("x".utf8), field: .body)
        let relabelled = EntrySeal(version: SealFormat.version, keyID: old.id, salt: cipher.entrySeal.salt)
        let opener = try EntryCipher(opening: relabelled, with: keyring, queueID: queue, idempotencyKey: "entry-1")
        #expect(sealError { _ = try opener.open(sealed, field: .body) }?.kind == .authenticationFailed)
    }

    @Test func unsupportedVersion() throws {
        let cipher = cipher()
        for version in [0, 4] {
            let seal = EntrySeal(version: version, keyID: cipher.entrySeal.keyID, salt: cipher.entrySeal.salt)
            #expect(sealError { _ = try opener(seal) } == .unsupportedVersion(version))
        }
    }

    /// Other bytes under a known id are caught by the key-check value before anything is
    /// opened; opening with them anyway fails authentication.
    @Test func wrongKeyBytes() throws {
        let cipher = cipher()
        let recorded = keyring.primary.keyCheckValue
        let impostor = try Keyring(primary: QueueKey(id: keyring.primary.id, bytes: Data(repeating: 7, count: 32)))
        #expect(throws: Never.self) { try keyring.check(keyring.primary.id, keyCheckValue: recorded) }
        #expect(sealError { try impostor.check(keyring.primary.id, keyCheckValue: recorded) } == .wrongKey(keyring.primary.id))
        #expect(sealError { try impostor.check(KeyID("00000000")!, keyCheckValue: recorded) } == .unknownKey(KeyID("00000000")!))
        let sealed = cipher.seal(Data("x".utf8), field: .body)
        let opener = try EntryCipher(opening: cipher.entrySeal, with: impostor, queueID: queue, idempotencyKey: "entry-1")
        #expect(sealError { _ = try opener.open(sealed, field: .body) }?.kind == .authenticationFailed)
    }

    @Test func verifyBodyRefusesATamperedBodyWhole() async throws {
        let cipher = cipher()
        var sealed = cipher.seal(plaintext, field: .body)
        sealed[sealed.count - 3] ^= 1
        let stream = AsyncStream<Data> { continuation in
            for piece in chunks(sealed) { continuation.yield(piece) }
            continuation.finish()
        }
        await #expect(throws: SealError.authenticationFailed(field: .body, chunk: 3)) { _ = try await cipher.verifyBody(stream) }
    }

    @Test func errorsCarryNoSecrets() {
        let errors: [SealError] = [
            .authenticationFailed(field: .body, chunk: 2), .truncated(field: .body, chunk: 1), .wrongKey(keyring.primary.id),
        ]
        for error in errors {
            #expect(!error.description.contains(keyring.primary.base64))
        }
        #expect(SealError.wrongKey(keyring.primary.id).description.contains(keyring.primary.id.rawValue))
    }
}

/// A body opened whole into memory (``EntryCipher/openBody(_:expectedSize:)``, which writes
/// each chunk's plaintext into one buffer of the recorded size) refuses every change as
/// ``EntryCipher/open(_:field:)`` does, and a body whose size is not the one recorded.
@Suite struct OpenBodyTamperingTests {
    let cipher = EntryCipher(sealingWith: Keyring.generate(), queueID: UUID(), idempotencyKey: "entry-1")

    /// `sealed` in pieces of `size` bytes (odd, so they straddle chunks), as a file is read.
    func stream(_ sealed: Data, size: Int = 10_007) -> AsyncStream<Data> {
        AsyncStream { continuation in
            for piece in pieces(sealed, size: size) { continuation.yield(piece) }
            continuation.finish()
        }
    }

    func openBodyError(_ sealed: Data, expectedSize: Int) async -> SealError? {
        do {
            _ = try await cipher.openBody(stream(sealed), expectedSize: expectedSize)
            return nil
        } catch {
            return error as? SealError
        }
    }

    @Test(arguments: [0, 1, SealFormat.chunkSize, 3 * SealFormat.chunkSize, 3 * SealFormat.chunkSize + 100])
    func opensWhatWasSealed(size: Int) async throws {
        let plaintext = pattern(size, seed: 3)
        let sealed = cipher.seal(plaintext, field: .body)
        #expect(try await cipher.openBody(stream(sealed), expectedSize: size) == plaintext)
        #expect(try await cipher.openBody(stream(sealed, size: SealFormat.sealedChunkSize), expectedSize: size) == plaintext)
    }

    @Test func changesFailAsOpenFails() async throws {
        let plaintext = pattern(3 * SealFormat.chunkSize + 100)
        let sealed = cipher.seal(plaintext, field: .body)
        let parts = pieces(sealed, size: SealFormat.sealedChunkSize)
        var flipped = sealed
        flipped[SealFormat.sealedChunkSize + 5] ^= 0x01
        let full = cipher.seal(pattern(3 * SealFormat.chunkSize), field: .body)
        let fullParts = pieces(full, size: SealFormat.sealedChunkSize)
        let cases: [(Data, Int)] = [
            (flipped, plaintext.count),
            (Data(parts.dropLast().joined()), plaintext.count),
            (Data([parts[1], parts[0], parts[2], parts[3]].joined()), plaintext.count),
            (Data((fullParts + [fullParts[1]]).joined()), 3 * SealFormat.chunkSize),
            (sealed.dropLast(50), plaintext.count),
        ]
        for (changed, size) in cases {
            let expected = sealError { _ = try cipher.open(changed, field: .body) }
            #expect(expected != nil)
            #expect(await openBodyError(changed, expectedSize: size) == expected)
        }
    }

    /// A recorded size that is not the body's: refused, whether the body is longer (no byte is
    /// written past the buffer) or shorter.
    @Test func sizeOtherThanRecordedIsRefused() async {
        let sealed = cipher.seal(pattern(2 * SealFormat.chunkSize + 10), field: .body)
        let longer = await openBodyError(sealed, expectedSize: 2 * SealFormat.chunkSize)
        #expect(longer?.kind == .invalidSeal)
        #expect(longer?.description.contains("longer than its recorded size") == true)
        let shorter = await openBodyError(sealed, expectedSize: 2 * SealFormat.chunkSize + 11)
        #expect(shorter?.kind == .invalidSeal)
        #expect(shorter?.description.contains("holds 131082 bytes, not its recorded 131083") == true)
    }
}
