package import Foundation
package import HTTPCore

/// How a queue seals an entry on its way in and opens it on its way out (``QueueSealing``),
/// through its ``EntrySealer`` (QueueEncryption's, from a keyring): the sealing mode, the
/// queue's id that every seal is bound to, and the errors of a queue that has no keys.
package struct EntrySealing: Sendable {
    package let queueID: UUID
    package let sealer: (any EntrySealer)?
    package let mode: QueueSealing.Mode

    package init(queueID: UUID, sealer: (any EntrySealer)?, mode: QueueSealing.Mode) {
        self.queueID = queueID
        self.sealer = sealer
        self.mode = mode
    }

    /// Whether new entries are sealed.
    package var sealsNewEntries: Bool { mode != .off }

    /// `entry` sealed under the primary key: its target and headers into its seal, its body
    /// (`body`, not yet stored) sealed as it is stored by `store`.
    package func seal(
        _ entry: inout NewEntry, body: RequestBody?, inlineLimit: Int, store: any QueueEnqueueStorage
    ) async throws(QueueError) -> StoredBody? {
        guard let sealer else { throw .keyUnavailable("sealing is \(mode), but no keyring was given") }
        return try await sealer.seal(&entry, body: body, inlineLimit: inlineLimit, queueID: queueID, store: store)
    }

    /// `body` made ready for `entry`'s row: sealed with the entry when new entries are sealed
    /// (its target and headers go into the seal), kept in the row when it fits `inlineLimit`
    /// (``QueueConfiguration/inlineBodyLimit``), streamed to `destination` otherwise.
    package func storeBody(
        of entry: inout NewEntry, _ body: RequestBody?, inlineLimit: Int, into destination: any QueueEnqueueStorage
    ) async throws(QueueError) -> StoredBody? {
        if sealsNewEntries { return try await seal(&entry, body: body, inlineLimit: inlineLimit, store: destination) }
        guard let body else { return nil }
        if let data = try await body.inlined(limit: inlineLimit) { return .inline(data) }
        return try await destination.storeBody(body.makeStream())
    }

    /// `entry`'s url, headers and row-kept body opened, or why they do not open; `nil` for an
    /// entry in clear. A drain opens a whole round of claimed entries this way before their
    /// sends start: one after another, each open finds the keys' state and the code it runs
    /// still in the caches, where opened inside each send, among other sends' work, it cost
    /// about twice as much.
    func openAhead(_ entry: QueueEntry) -> Result<OpenedEntry, QueueError>? {
        guard let seal = entry.seal else { return nil }
        guard let sealer else {
            return .failure(.keyUnavailable("entry \(entry.id) is sealed under key \(seal.keyID), but no keyring was given"))
        }
        return sealer.open(entry, seal: seal, queueID: queueID)
    }

    /// A sealed entry opened for its attempt: its url and headers as enqueued, and its body
    /// (`stored`: the bytes the store keeps), verified in full before this returns. A body in
    /// a file whose plaintext fits in `memory` comes back as that plaintext, with the hold to
    /// keep until its send is over (one read, one decryption); any other is opened again as it
    /// is sent, in constant memory. An entry in clear comes back as it is. `ahead`: what
    /// ``openAhead(_:)`` opened of it already.
    func open(
        _ entry: QueueEntry, stored: RequestBody?, memory: VerifiedBodyMemory?, ahead: Result<OpenedEntry, QueueError>? = nil
    ) async throws(QueueError) -> (entry: QueueEntry, body: RequestBody?, hold: VerifiedBodyMemory.Hold?) {
        guard let fields = try (ahead ?? openAhead(entry))?.get() else { return (entry, stored, nil) }
        var opened = entry
        (opened.url, opened.headers) = (fields.url, fields.headers)
        opened.seal = nil
        guard let sealed = stored else { return (opened, nil, nil) }
        opened.body = nil
        if let body = fields.inlineBody { return (opened, .data(body), nil) }
        guard let opener = fields.bodyOpener else { throw .sealBroken(entry.id, reason: "its body was not opened with its request") }
        let (body, hold) = try await opener.openBody(stored: sealed, memory: memory)
        return (opened, body, hold)
    }

    /// `response`, which `entry` kept at its delivery, as the store keeps it: sealed when new
    /// entries are sealed or `entry` is, in clear otherwise.
    package func keep(_ response: KeptResponse, of entry: QueueEntry) -> StoredResponse {
        let bytes = response.encoded
        guard sealsNewEntries || entry.seal != nil, let sealer else { return StoredResponse(bytes: bytes, keyID: nil) }
        return sealer.sealResponse(bytes, of: entry, queueID: queueID)
    }

    /// The response `entry` kept, opened.
    ///
    /// - Throws: ``QueueError/Kind/keyUnavailable`` for a sealed response and no keyring;
    ///   ``QueueError/Kind/sealBroken`` for one that does not authenticate or does not decode.
    package func open(_ stored: StoredResponse, of entry: QueueEntry) throws(QueueError) -> KeptResponse {
        var bytes = stored.bytes
        if let keyID = stored.keyID {
            guard let sealer else {
                throw .keyUnavailable("the response entry \(entry.id) kept is sealed under key \(keyID), but no keyring was given")
            }
            bytes = try sealer.openResponse(stored, of: entry, queueID: queueID).get()
        }
        guard let response = KeptResponse(encoded: bytes) else { throw .sealBroken(entry.id, reason: "its kept response does not decode") }
        return response
    }

    /// The size of a body as enqueued, from the size it is stored with once sealed.
    package static func plaintextLength(sealedLength: Int) -> Int {
        SealedSize.plaintext(sealed: sealedLength) ?? sealedLength
    }
}
