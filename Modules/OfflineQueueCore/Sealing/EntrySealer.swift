package import Foundation
package import HTTPCore

/// What seals a queue's entries and opens them again: the seam between the queue and its
/// cryptography. QueueEncryption fills it from a `Keyring` (`QueueSealing.on(keyring)`), so a
/// queue that does not seal compiles no cryptography, and the queue stores, claims, counts
/// and drains sealed entries through it without knowing the format's keys or ciphers
/// (Docs/Encryption.md is the format).
package protocol EntrySealer: Sendable {
    /// The id of the key new entries are sealed under, and that key's key-check value (hex).
    var primaryKey: (id: String, checkValue: String) { get }

    /// The key-check value of the key `id` names, or `nil` when these keys hold no such key
    /// (or `id` is not a key id).
    func keyCheckValue(ofKey id: String) -> String?

    /// `entry` sealed under the primary key, for the queue `queueID`: its target and headers
    /// into its seal, its body (`body`, not yet stored) sealed as it is stored by `store`
    /// (kept in the row when it fits `inlineLimit`).
    func seal(
        _ entry: inout NewEntry, body: RequestBody?, inlineLimit: Int, queueID: UUID, store: any QueueEnqueueStorage
    ) async throws(QueueError) -> StoredBody?

    /// `entry`'s url, headers and row-kept body opened (`seal` is its seal), and the opener of
    /// a body it keeps apart; or why they do not open: ``QueueError/Kind/keyUnavailable`` or
    /// ``QueueError/Kind/sealBroken``.
    func open(_ entry: QueueEntry, seal: StoredSeal, queueID: UUID) -> Result<OpenedEntry, QueueError>

    /// `plaintext`, the response `entry` kept at its delivery (``KeptResponse/encoded``),
    /// sealed under the primary key for the queue `queueID`.
    func sealResponse(_ plaintext: Data, of entry: QueueEntry, queueID: UUID) -> StoredResponse

    /// The plaintext of a response `entry` kept (`stored`, sealed by ``sealResponse(_:of:queueID:)``),
    /// or why it does not open: ``QueueError/Kind/keyUnavailable`` or ``QueueError/Kind/sealBroken``.
    func openResponse(_ stored: StoredResponse, of entry: QueueEntry, queueID: UUID) -> Result<Data, QueueError>
}

/// What opens the body a sealed entry keeps apart, with the key its url and headers were
/// opened with (derived once per entry).
package protocol SealedBodyOpener: Sendable {
    /// The body (`stored`: the bytes the store keeps), verified in full before this returns.
    /// One whose plaintext fits in `memory` comes back as that plaintext, with the hold to keep
    /// until its send is over; any other is opened again as it is sent, in constant memory.
    func openBody(stored: RequestBody, memory: VerifiedBodyMemory?) async throws(QueueError) -> (body: RequestBody, hold: VerifiedBodyMemory.Hold?)
}

/// A sealed entry's url, headers and body, opened ahead of its attempt
/// (``EntrySealer/open(_:seal:queueID:)``).
package struct OpenedEntry: Sendable {
    package let url: String
    package let headers: [StoredHeader]
    /// The body kept in the row, opened: `nil` when the entry has none or keeps it apart.
    package let inlineBody: Data?
    /// The opener of a body kept apart: `nil` when the entry has none or keeps it in the row
    /// (so an entry with a small body carries no opener).
    package let bodyOpener: (any SealedBodyOpener)?

    package init(url: String, headers: [StoredHeader], inlineBody: Data?, bodyOpener: (any SealedBodyOpener)?) {
        self.url = url
        self.headers = headers
        self.inlineBody = inlineBody
        self.bodyOpener = bodyOpener
    }
}

/// The sizes of the sealed format that a queue reports without a key (a sealed entry's
/// ``QueueEntry/bodyLength``): a value is sealed in chunks of 64 KiB, each with a 16-byte
/// tag. QueueEncryption's `SealFormat` takes its sizes from here, so they are written once.
package enum SealedSize {
    /// Plaintext bytes per chunk. Every chunk but the last holds exactly this many; the last
    /// holds 1 to this many, or 0 when the whole value is empty.
    package static let chunk = 64 * 1024
    /// The bytes AES-GCM adds to each chunk: its authentication tag.
    package static let tag = 16
    /// Bytes per sealed chunk, the last excepted.
    package static let sealedChunk = chunk + tag

    /// The number of chunks a value of `plaintext` bytes is sealed in: at least one.
    package static func chunkCount(plaintext: Int) -> Int {
        max(1, (plaintext + chunk - 1) / chunk)
    }

    /// The size of a value of `plaintext` bytes once sealed.
    package static func sealed(plaintext: Int) -> Int {
        plaintext + tag * chunkCount(plaintext: plaintext)
    }

    /// The plaintext size of a sealed value of `sealed` bytes, or `nil` when no plaintext
    /// seals to that size (it is truncated or extended).
    package static func plaintext(sealed: Int) -> Int? {
        guard sealed >= tag else { return nil }
        let fullChunks = (sealed - 1) / sealedChunk
        let last = sealed - fullChunks * sealedChunk
        guard last >= tag, fullChunks == 0 || last > tag else { return nil }
        return fullChunks * chunk + last - tag
    }
}
