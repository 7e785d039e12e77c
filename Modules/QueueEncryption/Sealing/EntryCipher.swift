public import Foundation
import Crypto

/// Seals and opens the fields of one queue entry.
///
/// Each field (``SealedField``) has a key of its own, derived with HKDF-SHA256 from a keyring
/// key and the entry's random salt, and is sealed with AES-256-GCM in chunks (the STREAM
/// construction: a counter nonce and a last-chunk flag). Every chunk authenticates the queue's
/// id, the entry's idempotency key, the key id and the field's name, so a sealed value opens
/// only in its own place: moved to another entry, queue or field, it fails. Docs/Encryption.md
/// specifies the format.
///
/// To seal a new entry, make a cipher from the keyring (it takes the primary key and a fresh
/// salt) and store ``entrySeal`` in clear beside the sealed fields:
///
/// ```swift
/// let cipher = EntryCipher(sealingWith: keyring, queueID: queueID, idempotencyKey: key)
/// let target = cipher.seal(Data("/orders?id=42".utf8), field: .target)
/// // store cipher.entrySeal (version, key id, salt), target, …
/// ```
///
/// To open it, make a cipher from the stored seal:
///
/// ```swift
/// let cipher = try EntryCipher(opening: seal, with: keyring, queueID: queueID, idempotencyKey: key)
/// let target = try cipher.open(sealedTarget, field: .target)
/// ```
///
/// Small fields go through ``seal(_:field:)`` and ``open(_:field:)`` in memory; bodies through
/// ``bodySealer()`` and ``bodyOpener()`` in constant memory. Both write the same format, so
/// either opens what the other sealed.
public struct EntryCipher: Sendable {
    /// What the entry stores in clear to be opened again: version, key id, salt.
    public let entrySeal: EntrySeal
    /// HKDF's extract, as the HMAC that expands each field's key from it
    /// (``ChunkStream/expander(for:key:)``).
    private let expander: KeyedHMAC
    /// What the associated data binds besides the version, key id and field: the queue's id
    /// and the entry's idempotency key.
    private let queueID: UUID
    private let idempotencyKey: String

    /// A cipher for a new entry: the keyring's primary key and a new random salt.
    ///
    /// - Parameters:
    ///   - keyring: the keyring whose primary key seals.
    ///   - queueID: the queue's own id, drawn once when the queue is made and stored in it.
    ///   - idempotencyKey: the entry's idempotency key, unique within the queue.
    public init(sealingWith keyring: Keyring, queueID: UUID, idempotencyKey: String) {
        self.init(key: keyring.primary, seal: .fresh(keyID: keyring.primary.id), queueID: queueID, idempotencyKey: idempotencyKey)
    }

    /// A cipher for a new entry of format `version`: ``SealFormat/version`` (its fields sealed
    /// apart) or ``SealFormat/joinedVersion`` (its request and body sealed with
    /// ``sealJoined(_:requestSize:appendingTo:)``).
    package init(sealingWith keyring: Keyring, queueID: UUID, idempotencyKey: String, version: Int) {
        precondition(version == SealFormat.version || version == SealFormat.joinedVersion, "format version \(version) is not written")
        self.init(key: keyring.primary, seal: .fresh(keyID: keyring.primary.id, version: version), queueID: queueID, idempotencyKey: idempotencyKey)
    }

    /// A cipher for an entry sealed with `seal`.
    ///
    /// Throws `unknownKey` when the keyring has no key with the seal's id,
    /// `unsupportedVersion` for a format version not in ``SealFormat/readableVersions``, and
    /// `invalidSeal` for a salt of the wrong length.
    public init(opening seal: EntrySeal, with keyring: Keyring, queueID: UUID, idempotencyKey: String) throws(SealError) {
        guard SealFormat.readableVersions.contains(seal.version) else { throw .unsupportedVersion(seal.version) }
        guard seal.salt.count == SealFormat.saltSize else {
            throw .invalidSeal("the salt has \(seal.salt.count) bytes, not \(SealFormat.saltSize)")
        }
        self.init(key: try keyring.key(seal.keyID), seal: seal, queueID: queueID, idempotencyKey: idempotencyKey)
    }

    /// A cipher with a given seal, of either readable version: for known-answer tests, which
    /// fix the salt, and for tests that write version 1 entries.
    init(key: QueueKey, seal: EntrySeal, queueID: UUID, idempotencyKey: String) {
        entrySeal = seal
        expander = ChunkStream.expander(for: seal, key: key)
        self.queueID = queueID
        self.idempotencyKey = idempotencyKey
    }

    /// `plaintext` sealed as `field`: ``SealFormat/sealedSize(plaintextSize:)`` bytes.
    public func seal(_ plaintext: Data, field: SealedField) -> Data {
        var sealed = Data(capacity: SealFormat.sealedSize(plaintextSize: plaintext.count))
        seal(plaintext, field: field, appendingTo: &sealed)
        return sealed
    }

    /// `plaintext` sealed as `field`, appended to `output`: a caller that stores the sealed
    /// value after other bytes (an entry's seal after its version and salt) writes it there
    /// without a buffer of its own.
    package func seal(_ plaintext: Data, field: SealedField, appendingTo output: inout Data) {
        // A value of one chunk (every request and most bodies) is that chunk sealed, without
        // the sealer's buffers.
        if plaintext.count <= SealFormat.chunkSize {
            stream(field).seal(plaintext, chunk: 0, last: true, appendingTo: &output)
            return
        }
        var sealer = sealer(field)
        output.append(sealer.update(plaintext))
        output.append(sealer.finish())
    }

    /// The plaintext of `sealed`, which was sealed as `field`; throws as ``BodyOpener`` does.
    public func open(_ sealed: Data, field: SealedField) throws(SealError) -> Data {
        if sealed.count <= SealFormat.sealedChunkSize, sealed.count >= SealFormat.tagSize,
            let plaintext = stream(field).open(sealed, chunk: 0, last: true)
        {
            return plaintext
        }
        // Anything else (more chunks, or a value that fails) goes the whole way, which names
        // what is wrong with it.
        var opener = opener(field)
        var plaintext = try opener.update(sealed)
        plaintext.append(try opener.finish())
        return plaintext
    }

    // MARK: - Version 3: request and body as one value

    /// Version 3's one value, field `entry`: `plaintext` is the request's plaintext
    /// (`requestSize` bytes) followed by the body's, together at most one chunk
    /// (``SealFormat/chunkSize``), sealed as one chunk. The sealed request (its ciphertext, as
    /// long as its plaintext) is appended to `seal`, after the bytes it holds; what is returned
    /// is the body's part: its ciphertext, then the value's tag, ``SealFormat/sealedSize(plaintextSize:)``
    /// of the body. So the tag travels with the body, and neither part opens without the other.
    package func sealJoined(_ plaintext: Data, requestSize: Int, appendingTo seal: inout Data) -> Data {
        precondition(entrySeal.version == SealFormat.joinedVersion, "only a version 3 cipher seals an entry joined")
        precondition(requestSize >= 0 && requestSize <= plaintext.count && plaintext.count <= SealFormat.chunkSize)
        let start = seal.count
        stream(.entry).seal(plaintext, chunk: 0, last: true, appendingTo: &seal)
        let body = Data(seal[(start + requestSize)...])
        seal.count = start + requestSize
        return body
    }

    /// The request's and the body's plaintext of a version 3 entry, from its sealed request
    /// (what ``sealJoined(_:requestSize:appendingTo:)`` appended to the seal) and its sealed
    /// body (what it returned). Throws `authenticationFailed` for the field `entry` when either
    /// part was changed, cut, swapped with another entry's or moved.
    package func openJoined(request sealedRequest: Data, body sealedBody: Data) throws(SealError) -> (request: Data, body: Data) {
        guard sealedBody.count >= SealFormat.tagSize, sealedRequest.count + sealedBody.count <= SealFormat.sealedChunkSize else {
            throw .authenticationFailed(field: .entry, chunk: 0)
        }
        // The two parts copied side by side into one buffer and opened there, which the
        // plaintext then owns: one buffer, where joining them and opening into another took two.
        let stream = stream(.entry)
        let opened = ChunkStream.uninitializedData(count: sealedRequest.count + sealedBody.count) { buffer in
            sealedRequest.withUnsafeBytes { buffer.copyMemory(from: $0) }
            sealedBody.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[sealedRequest.count...]).copyMemory(from: $0) }
            return stream.openInPlace(buffer, chunk: 0, last: true)
        }
        guard let opened else { throw .authenticationFailed(field: .entry, chunk: 0) }
        // The buffer's last 16 bytes held the tag; the plaintext is what comes before.
        let plaintext = opened.dropLast(SealFormat.tagSize)
        return (plaintext.prefix(sealedRequest.count), plaintext.dropFirst(sealedRequest.count))
    }

    /// A sealer for the entry's body, fed in pieces.
    public func bodySealer() -> BodySealer {
        sealer(.body)
    }

    /// An opener for the entry's sealed body, fed in pieces.
    public func bodyOpener() -> BodyOpener {
        opener(.body)
    }

    /// Authenticates a whole sealed body as it is read from `sealed`, keeping none of its
    /// plaintext, and returns the plaintext's size. Run it before sending a body so that a
    /// tampered one is refused before its first byte leaves, then open it again while sending.
    ///
    /// Throws what ``BodyOpener`` throws, and whatever `sealed` throws.
    public func verifyBody<Chunks: AsyncSequence>(_ sealed: Chunks) async throws -> Int where Chunks.Element == Data {
        var opener = bodyOpener()
        var size = 0
        for try await piece in sealed {
            size += try opener.update(piece).count
        }
        return size + (try opener.finish().count)
    }

    /// Authenticates a whole sealed body as it is read from `sealed`, as
    /// ``verifyBody(_:)`` does, and returns its plaintext: for a body small enough to hold in
    /// memory, which is then sent from there instead of being read and opened a second time.
    /// `expectedSize` (the plaintext's size, from the sealed size) sizes the buffer once.
    ///
    /// Throws what ``BodyOpener`` throws, `invalidSeal` when the plaintext is not
    /// `expectedSize` bytes (the row's recorded size is not the body's), and whatever `sealed`
    /// throws.
    public func openBody<Chunks: AsyncSequence>(_ sealed: Chunks, expectedSize: Int) async throws -> Data where Chunks.Element == Data {
        var opener = bodyOpener()
        // Each chunk is opened where its plaintext goes, in one buffer of the expected size,
        // which the returned `Data` then owns: no copy, and no zeroing before AES-GCM writes.
        guard expectedSize >= 0 else { throw SealError.invalidSeal("a body cannot hold \(expectedSize) bytes") }
        guard let bytes = malloc(max(expectedSize, 1)) else { throw SealError.invalidSeal("no memory for a body of \(expectedSize) bytes") }
        let buffer = UnsafeMutableRawBufferPointer(start: bytes, count: expectedSize)
        var size = 0
        do {
            for try await piece in sealed {
                try opener.update(piece, into: buffer, offset: &size)
            }
            try opener.finish(into: buffer, offset: &size)
            guard size == expectedSize else {
                throw SealError.invalidSeal("the sealed body holds \(size) bytes, not its recorded \(expectedSize)")
            }
        } catch {
            free(bytes)
            throw error
        }
        return Data(bytesNoCopy: bytes, count: size, deallocator: .free)
    }

    private func sealer(_ field: SealedField) -> BodySealer {
        BodySealer(stream: stream(field))
    }

    private func opener(_ field: SealedField) -> BodyOpener {
        BodyOpener(stream: stream(field))
    }

    private func stream(_ field: SealedField) -> ChunkStream {
        ChunkStream(
            aead: ChunkStream.expand(expander, field: field, seal: entrySeal).withUnsafeBytes { FieldAEAD(key: $0) },
            associatedData: AssociatedData.encode(
                version: entrySeal.version, queueID: queueID, idempotencyKey: idempotencyKey, keyID: entrySeal.keyID, field: field),
            field: field)
    }
}
