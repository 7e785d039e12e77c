/// The keys a queue seals and opens entries with: exactly one primary key, which seals new
/// entries, and any number of decrypt-only keys, which still open entries sealed before a
/// rotation.
///
/// A keyring lives in a file (``load(path:)``, ``create(path:)``, ``addPrimary(path:)``) or in a
/// systemd credential (``loadCredential(named:environment:)``); the queue never stores it.
/// Its `description` names the keys' ids, never their bytes.
///
/// ```swift
/// let keyring = try Keyring.load(path: "/etc/courier/queue.keyring")
/// let cipher = EntryCipher(sealingWith: keyring, queueID: queueID, idempotencyKey: "order-42")
/// ```
public struct Keyring: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Every key, in the order of the file: decrypt-only keys and the primary.
    public private(set) var keys: [QueueKey]
    /// The key that seals new entries.
    public private(set) var primary: QueueKey

    /// A keyring whose primary is `primary` and which can also open with `decryptOnly`;
    /// throws `malformedKeyring` when two keys share an id.
    public init(primary: QueueKey, decryptOnly: [QueueKey] = []) throws(SealError) {
        var seen = Set([primary.id])
        for key in decryptOnly where !seen.insert(key.id).inserted {
            throw .malformedKeyring(path: "keyring", line: nil, reason: "two keys have the id \(key.id)")
        }
        self.primary = primary
        keys = decryptOnly + [primary]
    }

    /// A new keyring holding one new random primary key.
    public static func generate() -> Keyring {
        Keyring(checked: [QueueKey.generate()], primary: 0)
    }

    /// Keys whose ids are known to be distinct.
    init(checked keys: [QueueKey], primary index: Int) {
        self.keys = keys
        primary = keys[index]
    }

    /// The key with this id, or `nil`.
    public subscript(id: KeyID) -> QueueKey? {
        keys.first { $0.id == id }
    }

    /// The key with this id; throws `unknownKey` when the keyring has none.
    public func key(_ id: KeyID) throws(SealError) -> QueueKey {
        guard let key = self[id] else { throw .unknownKey(id) }
        return key
    }

    /// Checks that the keyring's key `id` has the bytes whose key-check value a queue
    /// recorded: throws `unknownKey` when the keyring has no such key, `wrongKey` when its
    /// bytes differ.
    public func check(_ id: KeyID, keyCheckValue: String) throws(SealError) {
        guard try key(id).keyCheckValue == keyCheckValue else { throw .wrongKey(id) }
    }

    /// Makes a new random key the primary; the old primary stays, decrypt-only. Returns the
    /// new key.
    @discardableResult
    public mutating func addPrimary() -> QueueKey {
        var key = QueueKey.generate()
        while self[key.id] != nil { key = QueueKey.generate() }
        keys.append(key)
        primary = key
        return key
    }

    public var description: String {
        "Keyring(primary \(primary.id), \(keys.count) key\(keys.count == 1 ? "" : "s"): \(keys.map(\.id.rawValue).joined(separator: " ")))"
    }
    public var debugDescription: String { description }
}
