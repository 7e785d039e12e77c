internal import OfflineQueueCore

/// The sealed format's constants and size arithmetic (versions 2 and 3; version 1 is still
/// read). Docs/Encryption.md is its specification. The sizes are the queue's (`SealedSize`),
/// which reports a sealed entry's body size without a key.
public enum SealFormat {
    /// The format version of an entry whose fields are sealed apart: its request (target and
    /// headers) as one value, its body as another. Stored in clear with each entry, and bound
    /// into its associated data.
    public static let version = 2
    /// The format version of an entry whose body is kept in its row and fits one chunk with
    /// its request: the two are sealed as one value (field `entry`), one key and one AES-GCM
    /// operation where version 2 spends two, and one tag (16 bytes) fewer in the row.
    public static let joinedVersion = 3
    /// The format versions this module opens: 1 (the first, whose field keys need an HKDF
    /// extract per entry, and which seals an entry's target and headers apart), 2 and 3.
    public static let readableVersions: ClosedRange<Int> = 1...3
    /// Plaintext bytes per chunk. Every chunk but the last holds exactly this many; the last
    /// holds 1 to this many, or 0 when the whole value is empty.
    public static let chunkSize = SealedSize.chunk
    /// The bytes AES-GCM adds to each chunk: its authentication tag.
    public static let tagSize = SealedSize.tag
    /// Bytes per sealed chunk, the last excepted: ``chunkSize`` + ``tagSize``.
    public static let sealedChunkSize = SealedSize.sealedChunk
    /// Bytes of a field's AES-256-GCM key.
    static let keySize = 32
    /// Bytes of an AES-GCM nonce: a chunk's number (11, big endian) and its last-chunk flag.
    static let nonceSize = 12
    /// Bytes of random salt per entry.
    public static let saltSize = 16

    static let keyCheckLabel = "courier key check v1"
    /// The label of versions 2 and 3: HKDF's salt when a keyring key is extracted (once per key), and the
    /// start of every field key's info.
    static let keyLabel = "courier-seal v2"

    /// The number of chunks a value of `plaintextSize` bytes is sealed in: at least one.
    public static func chunkCount(plaintextSize: Int) -> Int {
        SealedSize.chunkCount(plaintext: plaintextSize)
    }

    /// The size of a value of `plaintextSize` bytes once sealed.
    public static func sealedSize(plaintextSize: Int) -> Int {
        SealedSize.sealed(plaintext: plaintextSize)
    }

    /// The plaintext size of a sealed value of `sealedSize` bytes, or `nil` when no
    /// plaintext seals to that size (it is truncated or extended).
    public static func plaintextSize(sealedSize: Int) -> Int? {
        SealedSize.plaintext(sealed: sealedSize)
    }
}
