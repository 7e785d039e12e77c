/// Whether and how a queue seals what it stores (`QueueEncryption`): the URL's path and query,
/// the headers and the body of each entry, with AES-256-GCM under a key derived for the entry
/// from the keyring's primary key. The method, the origin (scheme, host, port), the entry's
/// state, times, group, name, attempts and sizes stay clear: claiming, FIFO groups,
/// origin-bound templates, `sync list` and `sync stats` work without a key.
///
/// The keys come from QueueEncryption, which gives a keyring's sealing (`.on(keyring)`,
/// `.required(keyring)`, `sealing.keyring`); a queue that does not seal compiles no
/// cryptography:
///
/// ```swift
/// import QueueEncryption
///
/// var configuration = QueueConfiguration(path: "/var/lib/app/queue.sqlite")
/// configuration.sealing = .on(try Keyring.load(path: "/etc/app/queue.keyring"))
/// ```
///
/// A queue checks its keyring before it touches an entry, on its first enqueue or drain: each
/// key id its entries are sealed under must be in the keyring (else
/// ``QueueError/Kind/keyUnavailable``, naming the id and how many entries it seals), and with
/// the bytes the queue recorded for it (a key-check value per key id, kept in the queue; never
/// the key). An entry that fails to open is left as it is, its attempts unchanged, and stops
/// the drain (``QueueError/Kind/sealBroken``): nothing is sent, deleted or dead-lettered.
public struct QueueSealing: Sendable {
    /// What is sealed.
    public enum Mode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Nothing new is sealed. Entries sealed earlier are still opened, with the keyring.
        case off
        /// New entries are sealed with the keyring's primary key; entries in clear are still read.
        case on
        /// New entries are sealed, and nothing is ever written in clear: an enqueue without a
        /// keyring fails, and a queue holding entries in clear is refused until
        /// `sync keys encrypt` has sealed them.
        case required

        public var description: String { rawValue }
    }

    /// What the queue seals: nothing new (`off`), new entries (`on`), or everything, never
    /// writing in clear (`required`).
    public var mode: Mode
    /// What seals and opens entries: a keyring's (QueueEncryption's `keyring` property), or
    /// `nil`.
    package var sealer: (any EntrySealer)?
    /// How many bytes of verified plaintext the queue's sends may hold in memory together.
    ///
    /// A body kept in a file is authenticated whole before its first byte is sent. When its
    /// plaintext fits in what is left of this, the plaintext that check opened is kept for the
    /// send (one read and one decryption); otherwise the body is read and opened again as it
    /// is sent, in constant memory. The default, 32 MiB, keeps three 10 MiB bodies in memory
    /// at once at most; 0 always reads twice.
    public var verifiedBodyMemory = 32 * 1024 * 1024

    package init(mode: Mode, sealer: (any EntrySealer)?) {
        self.mode = mode
        self.sealer = sealer
    }

    /// Nothing sealed: a queue as Courier always kept one.
    public static let off = QueueSealing(mode: .off, sealer: nil)
}
