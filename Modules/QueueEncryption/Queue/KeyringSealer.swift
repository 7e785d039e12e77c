package import Foundation
package import HTTPCore
package import OfflineQueueCore

/// How a queue's entries are sealed with a keyring and opened again: the ``EntrySealer`` a
/// queue gets from `QueueSealing.on(keyring)`, in the format of Docs/Encryption.md. An
/// entry's seal (`StoredSeal`) is its key id, kept in a column of its own, and one value:
///
/// ```
/// 0x02 or 0x03                the format version
/// salt                        16 bytes
/// sealed request              whose plaintext is:
///     len(target)             32-bit big-endian
///     target                  the URL after its origin: path, query (`/orders?id=42`)
///     header lines            `name: value\n` each
/// ```
///
/// In version 2 the sealed request is the field `request`, its tag included, and a body is
/// sealed apart (field `body`). In version 3, written when the body is kept in the row and
/// fits one chunk with the request, request and body are sealed as one value (field
/// `entry`): the seal holds the request's ciphertext, the row's body the body's ciphertext and
/// the one tag. Entries of version 1 (sealed before version 2) are still opened; theirs is
/// `0x01 ‖ salt ‖ len(sealed target) ‖ sealed target ‖ sealed headers`, two fields.
///
/// The entry's `url` keeps the origin alone (`https://api.example.com:8443`), its `headers`
/// nothing, its body the sealed bytes. The origin, method and everything else stay clear.
package struct KeyringSealer: EntrySealer {
    package let keyring: Keyring

    package init(keyring: Keyring) {
        self.keyring = keyring
    }

    package var primaryKey: (id: String, checkValue: String) {
        (keyring.primary.id.rawValue, keyring.primary.keyCheckValue)
    }

    package func keyCheckValue(ofKey id: String) -> String? {
        KeyID(id).flatMap { keyring[$0] }?.keyCheckValue
    }

    // MARK: - Sealing

    /// `entry` sealed under the primary key: its target and headers into its seal, its body
    /// (`body`, not yet stored) sealed as it is stored by `store`. A body kept in the row that
    /// fits one chunk with the request is sealed with it (version 3); any other apart
    /// (version 2).
    package func seal(
        _ entry: inout NewEntry, body: RequestBody?, inlineLimit: Int, queueID: UUID, store: any QueueEnqueueStorage
    ) async throws(QueueError) -> StoredBody? {
        let (origin, target) = Self.split(entry.url)
        let inline = try await body?.inlined(limit: inlineLimit)
        var request = Self.request(target: target, headers: entry.headers, room: inline?.count ?? 0)
        entry.url = origin
        entry.headers = []
        let requestSize = request.count
        if let inline, requestSize + inline.count <= SealFormat.chunkSize {
            let cipher = EntryCipher(
                sealingWith: keyring, queueID: queueID, idempotencyKey: entry.idempotencyKey, version: SealFormat.joinedVersion)
            // Into the room the request was made with: no second buffer.
            request.append(inline)
            var blob = Self.sealStart(cipher, capacity: SealFormat.sealedSize(plaintextSize: request.count))
            let sealedBody = cipher.sealJoined(request, requestSize: requestSize, appendingTo: &blob)
            entry.seal = StoredSeal(keyID: cipher.entrySeal.keyID.rawValue, blob: blob)
            return .inline(sealedBody)
        }
        let cipher = EntryCipher(sealingWith: keyring, queueID: queueID, idempotencyKey: entry.idempotencyKey)
        var blob = Self.sealStart(cipher, capacity: SealFormat.sealedSize(plaintextSize: request.count))
        cipher.seal(request, field: .request, appendingTo: &blob)
        entry.seal = StoredSeal(keyID: cipher.entrySeal.keyID.rawValue, blob: blob)
        guard let body else { return nil }
        if let inline { return .inline(cipher.seal(inline, field: .body)) }
        return try await store.storeBody(ByteStream(TransformedChunks(base: body.makeStream()) { cipher.bodySealer() }))
    }

    /// A request's plaintext: the target's length and the target, then the header lines, in
    /// one buffer with `room` bytes more (for a body sealed with it).
    private static func request(target: String, headers: [StoredHeader], room: Int) -> Data {
        var size = 4 + target.utf8.count
        for header in headers { size += header.name.utf8.count + 2 + header.value.utf8.count + 1 }
        var request = Data(capacity: size + room)
        request.appendLengthPrefixedUTF8(target)
        for header in headers {
            request.appendUTF8(header.name)
            request.append(UInt8(ascii: ":"))
            request.append(UInt8(ascii: " "))
            request.appendUTF8(header.value)
            request.append(UInt8(ascii: "\n"))
        }
        return request
    }

    /// A seal's clear start, version and salt, in a buffer with room for `capacity` bytes more.
    private static func sealStart(_ cipher: EntryCipher, capacity: Int) -> Data {
        var blob = Data(capacity: 1 + SealFormat.saltSize + capacity)
        blob.append(UInt8(cipher.entrySeal.version))
        blob.append(cipher.entrySeal.salt)
        return blob
    }

    /// `url` cut after its origin: `https://h:1/p?q` into `https://h:1` and `/p?q`. Joined
    /// again they are `url`, byte for byte.
    package static func split(_ url: String) -> (origin: String, target: String) {
        if let split = asciiSplit(url) { return split }
        guard let scheme = url.range(of: "://") else { return (url, "") }
        let rest = url[scheme.upperBound...]
        guard let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) else { return (url, "") }
        return (String(url[..<end]), String(url[end...]))
    }

    /// ``split(_:)`` of an ASCII `url`, byte by byte: the same cut as the search by characters
    /// (an ASCII string's characters are its bytes, `\r\n` aside, which neither `://` nor the
    /// delimiters contain), without Foundation's `range(of:)`, which bridges through CFString
    /// on Linux. `nil` when `url` is not ASCII.
    private static func asciiSplit(_ url: String) -> (origin: String, target: String)? {
        var contiguous = url
        // Where the target starts: `nil` for a URL not ASCII, its length for one without a target.
        let cut = contiguous.withUTF8 { bytes -> Int? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            let slash = UInt8(ascii: "/")
            var index = 0
            var afterScheme = false
            while index < bytes.count {
                let byte = bytes[index]
                if !afterScheme {
                    if byte == UInt8(ascii: ":"), index + 2 < bytes.count, bytes[index + 1] == slash, bytes[index + 2] == slash {
                        afterScheme = true
                        index += 3
                        continue
                    }
                } else if byte == slash || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                    return index
                }
                index += 1
            }
            return bytes.count
        }
        guard let cut else { return nil }
        guard cut < url.utf8.count else { return (url, "") }
        let index = url.utf8.index(url.utf8.startIndex, offsetBy: cut)
        return (String(url[..<index]), String(url[index...]))
    }

    // MARK: - Opening

    package func open(_ entry: QueueEntry, seal: StoredSeal, queueID: UUID) -> Result<OpenedEntry, QueueError> {
        do throws(QueueError) {
            let cipher = try cipher(for: entry, seal: seal, queueID: queueID)
            let fields = try Self.fields(of: entry, seal: seal, cipher: cipher)
            var body = fields.body
            if body == nil, case .inline(let data) = entry.body {
                do throws(SealError) {
                    body = try cipher.open(data, field: .body)
                } catch {
                    throw .sealBroken(entry.id, reason: error.description)
                }
            }
            // A body kept apart is opened at its send, with this entry's key.
            let opener = body == nil && entry.body != nil ? FileBodyOpener(cipher: cipher, entryID: entry.id) : nil
            return .success(OpenedEntry(url: fields.url, headers: fields.headers, inlineBody: body, bodyOpener: opener))
        } catch {
            return .failure(error)
        }
    }

    /// `entry`'s url and headers as enqueued, opened with `cipher`, and in version 3 its body.
    private static func fields(
        of entry: QueueEntry, seal: StoredSeal, cipher: EntryCipher
    ) throws(QueueError) -> (url: String, headers: [StoredHeader], body: Data?) {
        let version = cipher.entrySeal.version
        if version == 1 {
            let (url, headers) = try fieldsV1(of: entry, seal: seal, cipher: cipher)
            return (url, headers, nil)
        }
        let sealed = seal.blob.dropFirst(1 + SealFormat.saltSize)
        let request: Data
        var body: Data?
        do throws(SealError) {
            if version == SealFormat.joinedVersion {
                guard case .inline(let sealedBody) = entry.body else {
                    throw .invalidSeal("format version 3 keeps the body in the row, and the row holds none")
                }
                (request, body) = try cipher.openJoined(request: sealed, body: sealedBody)
            } else {
                request = try cipher.open(sealed, field: .request)
            }
        } catch {
            throw .sealBroken(entry.id, reason: error.description)
        }
        // The request authenticated, so its layout is what a sealer wrote; checked anyway.
        let start = request.startIndex
        guard request.count >= 4 else { throw .sealBroken(entry.id, reason: "its sealed request is cut short") }
        var length = 0
        for byte in request[start..<(start + 4)] { length = length << 8 | Int(byte) }
        guard length <= request.count - 4 else { throw .sealBroken(entry.id, reason: "its sealed request is cut short") }
        let target = request[(start + 4)..<(start + 4 + length)]
        let headers = request[(start + 4 + length)...]
        let url = entry.url + String(decoding: target, as: UTF8.self)
        return (url, headers.isEmpty ? [] : LineCoding.decodeHeaders(String(decoding: headers, as: UTF8.self)), body)
    }

    /// ``fields(of:seal:cipher:)`` of a version 1 entry: target and headers sealed apart.
    private static func fieldsV1(of entry: QueueEntry, seal: StoredSeal, cipher: EntryCipher) throws(QueueError) -> (url: String, headers: [StoredHeader]) {
        let parts = try partsV1(seal.blob, id: entry.id)
        do throws(SealError) {
            let target = try cipher.open(parts.target, field: .target)
            let headers = try cipher.open(parts.headers, field: .headers)
            return (entry.url + String(decoding: target, as: UTF8.self), LineCoding.decodeHeaders(String(decoding: headers, as: UTF8.self)))
        } catch {
            throw .sealBroken(entry.id, reason: error.description)
        }
    }

    // MARK: - Kept responses

    /// A response `entry` kept, sealed under the primary key: `0x02 ‖ salt ‖ sealed value`,
    /// field `response`, with a salt of its own, bound to the queue and the entry's key.
    package func sealResponse(_ plaintext: Data, of entry: QueueEntry, queueID: UUID) -> StoredResponse {
        let cipher = EntryCipher(sealingWith: keyring, queueID: queueID, idempotencyKey: entry.idempotencyKey)
        var blob = Self.sealStart(cipher, capacity: SealFormat.sealedSize(plaintextSize: plaintext.count))
        cipher.seal(plaintext, field: .response, appendingTo: &blob)
        return StoredResponse(bytes: blob, keyID: cipher.entrySeal.keyID.rawValue)
    }

    package func openResponse(_ stored: StoredResponse, of entry: QueueEntry, queueID: UUID) -> Result<Data, QueueError> {
        guard let keyID = stored.keyID else { return .success(stored.bytes) }
        do throws(QueueError) {
            let cipher = try cipher(for: entry, seal: StoredSeal(keyID: keyID, blob: stored.bytes), queueID: queueID)
            guard cipher.entrySeal.version == SealFormat.version else {
                throw .sealBroken(entry.id, reason: "its kept response has format version \(cipher.entrySeal.version), not \(SealFormat.version)")
            }
            do throws(SealError) {
                return .success(try cipher.open(Data(stored.bytes.dropFirst(1 + SealFormat.saltSize)), field: .response))
            } catch {
                throw .sealBroken(entry.id, reason: "its kept response: \(error.description)")
            }
        } catch {
            return .failure(error)
        }
    }

    package func cipher(for entry: QueueEntry, seal: StoredSeal, queueID: UUID) throws(QueueError) -> EntryCipher {
        guard let keyID = KeyID(seal.keyID) else { throw .sealBroken(entry.id, reason: "its key id \(seal.keyID.debugDescription) is not one") }
        guard seal.blob.count >= 1 + SealFormat.saltSize else { throw .sealBroken(entry.id, reason: "its seal is cut short") }
        let start = seal.blob.startIndex
        let version = Int(seal.blob[start])
        let salt = seal.blob[(start + 1)..<(start + 1 + SealFormat.saltSize)]
        do throws(SealError) {
            return try EntryCipher(
                opening: EntrySeal(version: version, keyID: keyID, salt: salt), with: keyring,
                queueID: queueID, idempotencyKey: entry.idempotencyKey
            )
        } catch {
            if case .unknownKey = error.kind {
                throw .keyUnavailable("entry \(entry.id) is sealed under key \(seal.keyID), which the keyring does not hold")
            }
            throw .sealBroken(entry.id, reason: error.description)
        }
    }

    private static func partsV1(_ blob: Data, id: EntryID) throws(QueueError) -> (target: Data, headers: Data) {
        let start = blob.startIndex + 1 + SealFormat.saltSize
        guard blob.count >= 1 + SealFormat.saltSize + 4 else { throw .sealBroken(id, reason: "its seal is cut short") }
        var length = 0
        for byte in blob[start..<(start + 4)] { length = length << 8 | Int(byte) }
        let targetStart = start + 4
        guard length <= blob.endIndex - targetStart else { throw .sealBroken(id, reason: "its seal is cut short") }
        return (Data(blob[targetStart..<(targetStart + length)]), Data(blob[(targetStart + length)...]))
    }
}

/// The body a sealed entry keeps apart, opened with the key its request was opened with.
struct FileBodyOpener: SealedBodyOpener {
    let cipher: EntryCipher
    let entryID: EntryID

    func openBody(stored sealed: RequestBody, memory: VerifiedBodyMemory?) async throws(QueueError) -> (body: RequestBody, hold: VerifiedBodyMemory.Hold?) {
        let cipher = cipher
        if case .data(let data) = sealed.source {
            do throws(SealError) {
                return (.data(try cipher.open(data, field: .body)), nil)
            } catch {
                throw .sealBroken(entryID, reason: error.description)
            }
        }
        // The whole body authenticates before its first byte leaves: a changed or cut body
        // never produces part of an upload. Read in sealed chunks, so that the opener takes
        // each piece as it is, without copying it into a chunk of its own.
        let chunks = { @Sendable in sealed.makeStream(chunkSize: SealFormat.sealedChunkSize) }
        do {
            if let size = sealed.length.map(EntrySealing.plaintextLength(sealedLength:)), let hold = memory?.reserve(size) {
                let plaintext = try await cipher.openBody(chunks(), expectedSize: size)
                // Sent in chunks, as a body read from a file is: a transport copies one chunk at
                // a time, so the plaintext is all the memory the send holds.
                return (.stream(length: plaintext.count) { ByteStream(data: plaintext, chunkSize: SealFormat.chunkSize) }, hold)
            }
            let length = try await cipher.verifyBody(chunks())
            return (.stream(length: length) { ByteStream(TransformedChunks(base: chunks()) { cipher.bodyOpener() }) }, nil)
        } catch let error as SealError {
            throw .sealBroken(entryID, reason: error.description)
        } catch {
            throw .io(path: "body of entry \(entryID)", reason: "\(error)")
        }
    }
}

/// What turns a body's pieces into others as they arrive, holding a chunk at most: a sealer,
/// or an opener (whose every chunk authenticates before its plaintext is returned, and whose
/// `finish` checks the end, so a cut body fails there).
protocol BodyTransform: Sendable {
    mutating func update(_ piece: Data) throws -> Data
    mutating func finish() throws -> Data
}

extension BodySealer: BodyTransform {}
extension BodyOpener: BodyTransform {}

/// A body's pieces through a fresh `Transform` from `make` at each iteration.
struct TransformedChunks<Transform: BodyTransform>: AsyncSequence, Sendable {
    typealias Element = Data
    let base: ByteStream
    let make: @Sendable () -> Transform

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: ByteStream.AsyncIterator
        var transform: Transform
        var finished = false

        mutating func next() async throws -> Data? {
            while !finished {
                guard let piece = try await base.next() else {
                    finished = true
                    let last = try transform.finish()
                    return last.isEmpty ? nil : last
                }
                let output = try transform.update(piece)
                if !output.isEmpty { return output }
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), transform: make())
    }
}
